// engine/include/ringload/engine/write_executor.hpp
//
// Executes a WritePlan: acquires slots in file order, has the producer fill each window on the
// worker pool, writes each filled window through the sink, and stops at the first error or on
// cancel, after every write in flight has finished and every slot is back.
//
//     auto run = run_write_plan(sink, ring, pool, plan, producer, controls);
//     Result<WriteStats> stats = co_await std::move(run);
#pragma once

#include "ringload/engine/buffer_ring.hpp"
#include "ringload/engine/executor.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/engine/worker_pool.hpp"
#include "ringload/engine/write_feed.hpp"
#include "ringload/engine/write_plan.hpp"

namespace ringload {

struct WriteStats {
    std::uint64_t bytes_written = 0; // through the sink, padding of the last window included
    std::uint64_t windows = 0;
    double seconds = 0;
};

// The plan's last window is padded with zeros up to the sink's alignment: the caller trims
// the file to plan.length_bytes when it commits. With a feed (started by the caller), no
// window is filled before the feed has the bytes it reads in place.
Task<Result<WriteStats>> run_write_plan(WriteSink& sink, BufferRing& ring, WorkerPool& pool, const WritePlan& plan,
                                        PieceProducer& producer, RunControls controls, WriteFeed* feed = nullptr);

} // namespace ringload
