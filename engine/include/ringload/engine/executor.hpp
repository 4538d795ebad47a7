// engine/include/ringload/engine/executor.hpp
//
// Executes a Plan: keeps as many chunk reads in flight as the ring has free slots, hands each
// filled chunk to the handler on the worker pool, and stops at the first error or on cancel,
// after every read in flight has finished and every slot is back. The first chunk (or those of
// Plan::read_first) is read alone, before the others are queued: the first tensor comes early.
//
//     auto running = run_plan(source, ring, pool, plan, handler, controls);   // in a coroutine
//     RL_CO_TRY(stats, co_await std::move(running));   // stats.bytes_read, .chunks, .seconds
#pragma once

#include "ringload/engine/buffer_ring.hpp"
#include "ringload/engine/plan.hpp"
#include "ringload/engine/source.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/engine/worker_pool.hpp"
#include "ringload/progress.hpp"

#include <atomic>

namespace ringload {

struct RunControls {
    const CancelToken* cancel = nullptr;
    ProgressCallback progress; // bytes of the plan handed to the handler so far
    std::uint64_t progress_tensors_total = 0;
    // Tensors handed over so far (counted by the caller as records complete), for the reports.
    const std::atomic<std::uint64_t>* tensors_done = nullptr;
    // Called once on the loop thread when the last read of the plan has come in (the workers
    // may still be at it); not when the run stops first (LoadOptions::on_reads_done).
    std::function<void()> reads_done;
};

struct RunStats {
    std::uint64_t bytes_read = 0;
    std::uint64_t bytes_in_place = 0; // of bytes_read, read straight to their destination
    std::uint64_t chunks = 0;
    double seconds = 0;
};

Task<Result<RunStats>> run_plan(Source& source, BufferRing& ring, WorkerPool& pool, const Plan& plan,
                                ChunkHandler& handler, RunControls controls);

} // namespace ringload
