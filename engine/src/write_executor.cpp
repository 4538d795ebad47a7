// engine/src/write_executor.cpp
#include "ringload/engine/write_executor.hpp"

#include "run_tracker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

namespace ringload {
namespace {

// One window of the file and the slot it is assembled in. `pending` counts the jobs that
// still write into the slot: its own, plus the previous window's when a whole piece straddles.
struct WindowSlot {
    SlotLease lease;
    std::atomic<int> pending{0};
};

struct Geometry {
    std::uint64_t window_bytes = 0; // the slot size
    std::uint64_t length_bytes = 0; // the file
    std::size_t alignment = 1;

    std::size_t count() const { return static_cast<std::size_t>((length_bytes + window_bytes - 1) / window_bytes); }
    std::uint64_t begin(std::size_t k) const { return k * window_bytes; }
    std::uint64_t end(std::size_t k) const { return std::min(begin(k) + window_bytes, length_bytes); }
    // What is written: the window, the last one padded up to the sink's alignment.
    std::size_t write_length(std::size_t k) const {
        std::uint64_t useful = end(k) - begin(k);
        return static_cast<std::size_t>((useful + alignment - 1) / alignment * alignment);
    }
};

// Items done in any order, and the first of them not done yet.
class DoneInAnyOrder {
public:
    explicit DoneInAnyOrder(std::size_t count) : done_(count, false) {}
    void mark(std::size_t i) {
        done_[i] = true;
        while (first_open_ < done_.size() && done_[first_open_]) {
            ++first_open_;
        }
    }
    std::optional<std::size_t> first_open() const {
        return first_open_ < done_.size() ? std::optional(first_open_) : std::nullopt;
    }

private:
    std::vector<bool> done_;
    std::size_t first_open_ = 0;
};

// Loop thread: how far the file is finished, for a feed. Windows are written, and side jobs
// end, in any order; the front is the first byte not finished by both.
class FinishedFront {
public:
    FinishedFront(const Geometry& geometry, const WritePlan& plan)
        : geometry_(geometry), plan_(plan), windows_(geometry.count()), side_jobs_(plan.side_jobs.size()) {}

    // Each returns the front when it moved, else nothing.
    std::optional<std::uint64_t> window_written(std::size_t k) {
        windows_.mark(k);
        return moved();
    }
    std::optional<std::uint64_t> side_job_ended(std::size_t j) {
        side_jobs_.mark(j);
        return moved();
    }

private:
    std::optional<std::uint64_t> moved() {
        const auto window = windows_.first_open();
        std::uint64_t front = window ? geometry_.begin(*window) : geometry_.length_bytes;
        if (const auto job = side_jobs_.first_open()) {
            front = std::min(front, plan_.side_jobs[*job].start_offset_bytes);
        }
        if (front <= front_) {
            return std::nullopt;
        }
        front_ = front;
        return front;
    }

    const Geometry& geometry_;
    const WritePlan& plan_;
    DoneInAnyOrder windows_;
    DoneInAnyOrder side_jobs_;
    std::uint64_t front_ = 0;
};

struct WriteRunState : RunTracker {
    WriteRunState(asio::any_io_executor loop, std::size_t window_count)
        : RunTracker(loop), windows(std::make_unique<WindowSlot[]>(window_count)) {}

    std::unique_ptr<WindowSlot[]> windows;
    std::optional<FinishedFront> front; // with a feed
};

struct RunContext {
    WriteSink& sink;
    WorkerPool& pool;
    const WritePlan& plan;
    PieceProducer& producer;
    const RunControls& controls;
    WriteFeed* feed; // null: the caller's bytes are all in memory
    Geometry geometry;
    std::shared_ptr<WriteRunState> state;
    asio::any_io_executor loop;
};

Result<std::vector<bool>> check_plan(const WritePlan& plan, const Geometry& geometry, const std::string& sink_name) {
    std::vector<bool> straddles_end(geometry.count(), false);
    std::uint64_t position = 0;
    for (const auto& piece : plan.pieces) {
        if (piece.offset_bytes != position) {
            return fail(errc::invalid_argument,
                        sink_name + ": the write plan has a gap or overlap at byte " + std::to_string(position));
        }
        if (piece.whole && piece.length_bytes > geometry.window_bytes) {
            return fail(errc::invalid_argument, sink_name + ": a piece of " + std::to_string(piece.length_bytes) +
                                                    " bytes that must be produced whole is longer than a slot");
        }
        if (piece.whole && piece.length_bytes > 0) {
            auto first = static_cast<std::size_t>(piece.offset_bytes / geometry.window_bytes);
            auto last = static_cast<std::size_t>((piece.end_bytes() - 1) / geometry.window_bytes);
            if (first != last) {
                straddles_end[first] = true;
            }
        }
        position = piece.end_bytes();
    }
    if (position != plan.length_bytes) {
        return fail(errc::invalid_argument, sink_name + ": the write plan's pieces end at byte " +
                                                std::to_string(position) + ", not at its length " +
                                                std::to_string(plan.length_bytes));
    }
    return straddles_end;
}

// Writes one filled window (resuming short writes), then gives its slot back.
Task<void> write_window(std::shared_ptr<RunContext> run, std::size_t k, SlotLease lease) {
    WriteRunState& state = *run->state;
    const std::uint64_t offset = run->geometry.begin(k);
    const std::size_t length = run->geometry.write_length(k);
    std::size_t done = 0;
    while (done < length && !state.has_failed()) {
        SlotBytes source{&lease, done, length - done};
        auto written = co_await run->sink.write_some_at(offset + done, source);
        if (!written) {
            state.record_failure(written.error());
            co_return;
        }
        if (*written == 0) {
            state.record_failure(fail(errc::io_error, run->sink.name() + ": a write at offset " +
                                                          std::to_string(offset + done) + " wrote nothing"));
            co_return;
        }
        done += *written;
    }
    state.add_done(run->geometry.end(k) - offset);
    state.report_progress(run->controls, run->plan.length_bytes, false);
    if (state.front) {
        if (auto front = state.front->window_written(k)) {
            run->feed->done_before(*front);
        }
    }
}

// One job's share of window k is done: the last share sends the window to the sink.
void finish_share(const std::shared_ptr<RunContext>& run, std::size_t k) {
    WindowSlot& window = run->state->windows[k];
    if (window.pending.fetch_sub(1, std::memory_order_acq_rel) != 1) {
        return;
    }
    SlotLease lease = std::move(window.lease);
    if (run->state->has_failed()) {
        return; // the slot goes back when `lease` dies
    }
    const std::uint64_t begin = run->geometry.begin(k);
    run->producer.window_filled(begin, lease.bytes().first(static_cast<std::size_t>(run->geometry.end(k) - begin)));
    asio::post(run->loop, [run, k, lease = std::move(lease)]() mutable {
        asio::co_spawn(run->loop, write_window(run, k, std::move(lease)), asio::detached);
    });
}

// Fills window k: every part of a splittable piece in it, and every whole piece that starts
// in it (one may run on into window k + 1).
Result<void> fill_window(RunContext& run, std::size_t k) {
    const auto& pieces = run.plan.pieces;
    const std::uint64_t begin = run.geometry.begin(k);
    const std::uint64_t end = run.geometry.end(k);
    std::span<std::byte> slot = run.state->windows[k].lease.bytes();
    auto it = std::upper_bound(pieces.begin(), pieces.end(), begin,
                               [](std::uint64_t offset, const WritePiece& p) { return offset < p.offset_bytes; });
    if (it != pieces.begin()) {
        --it;
    }
    for (; it != pieces.end() && it->offset_bytes < end; ++it) {
        const WritePiece& piece = *it;
        if (piece.length_bytes == 0 || piece.end_bytes() <= begin) {
            continue;
        }
        if (piece.whole) {
            if (piece.offset_bytes < begin) {
                continue; // the previous window's job produced it
            }
            auto first_end = std::min(piece.end_bytes(), end);
            auto first = slot.subspan(static_cast<std::size_t>(piece.offset_bytes - begin),
                                      static_cast<std::size_t>(first_end - piece.offset_bytes));
            std::span<std::byte> second;
            if (piece.end_bytes() > end) {
                second =
                    run.state->windows[k + 1].lease.bytes().first(static_cast<std::size_t>(piece.end_bytes() - end));
            }
            RL_TRY_VOID(run.producer.produce_whole(piece, first, second));
            continue;
        }
        auto from = std::max(piece.offset_bytes, begin);
        auto to = std::min(piece.end_bytes(), end);
        RL_TRY_VOID(run.producer.produce_part(
            piece, from - piece.offset_bytes,
            slot.subspan(static_cast<std::size_t>(from - begin), static_cast<std::size_t>(to - from))));
    }
    // The last window's padding up to the sink's alignment (the file is trimmed at commit).
    const std::size_t useful = static_cast<std::size_t>(end - begin);
    std::memset(slot.data() + useful, 0, run.geometry.write_length(k) - useful);
    return {};
}

// Tells the loop that one counted piece of work has ended (posted last: after it, the worker no
// longer touches the run).
void end_counted(const std::shared_ptr<RunContext>& run) {
    asio::post(run->loop, [run] { run->state->work_ended(); });
}

// Runs `work` on the pool; the loop counts it so that the run waits for it to end.
void post_counted(const std::shared_ptr<RunContext>& run, std::function<void()> work) {
    run->state->work_started();
    run->pool.post([run, work = std::move(work)] {
        work();
        end_counted(run);
    });
}

// One step of a side job on a worker; the next step goes to the back of the queue. The whole
// job counts as one piece of work until its last step.
void run_side_step(const std::shared_ptr<RunContext>& run, const SideJob& job) {
    if (!run->state->has_failed()) {
        auto more = job.run();
        if (!more) {
            run->state->record_failure(more.error());
        } else if (*more) {
            run->pool.post([run, &job] { run_side_step(run, job); });
            return;
        }
    }
    if (run->state->front) { // posted before end_counted: the run is still there to take it
        const auto j = static_cast<std::size_t>(&job - run->plan.side_jobs.data());
        asio::post(run->loop, [run, j] {
            if (auto front = run->state->front->side_job_ended(j)) {
                run->feed->done_before(*front);
            }
        });
    }
    end_counted(run);
}

void post_side_job(const std::shared_ptr<RunContext>& run, const SideJob& job) {
    run->state->work_started();
    run->pool.post([run, &job] { run_side_step(run, job); });
}

// Fills window k on a worker, then gives up its share of the window (and of the next one, which
// a piece of window k runs on into).
void post_window(const std::shared_ptr<RunContext>& run, std::size_t k, bool straddles) {
    post_counted(run, [run, k, straddles] {
        if (!run->state->has_failed()) {
            auto filled = fill_window(*run, k);
            if (!filled) {
                run->state->record_failure(filled.error());
            }
        }
        finish_share(run, k);
        if (straddles) {
            finish_share(run, k + 1);
        }
    });
}

// Waits (on the loop, polling: a feed loads on threads of its own) until the feed has in place
// every tensor that the file's bytes before `offset` read. False: the run stops.
Task<bool> wait_for_feed(std::shared_ptr<RunContext> run, std::uint64_t offset) {
    asio::steady_timer timer(run->loop);
    for (;;) {
        auto ready = run->feed->ready_before(offset);
        if (!ready) {
            run->state->record_failure(ready.error());
            co_return false;
        }
        if (*ready) {
            co_return true;
        }
        if (run->state->should_stop(run->controls, run->sink.name())) {
            co_return false;
        }
        timer.expires_after(std::chrono::microseconds(200));
        auto waited = co_await timer.async_wait(use_task);
        (void)waited;
    }
}

} // namespace

Task<Result<WriteStats>> run_write_plan(WriteSink& sink, BufferRing& ring, WorkerPool& pool, const WritePlan& plan,
                                        PieceProducer& producer, RunControls controls, WriteFeed* feed) {
    auto loop = co_await asio::this_coro::executor;
    Geometry geometry{ring.slot_size_bytes(), plan.length_bytes, std::max<std::size_t>(sink.alignment_bytes(), 1)};
    if (ring.slot_count() < 2 || geometry.window_bytes % geometry.alignment != 0) {
        co_return fail(errc::invalid_argument, sink.name() +
                                                   ": writing needs at least two ring slots, each a multiple of " +
                                                   std::to_string(geometry.alignment) + " bytes");
    }
    RL_CO_TRY(straddles_end, check_plan(plan, geometry, sink.name()));
    const std::size_t window_count = geometry.count();
    auto run = std::make_shared<RunContext>(RunContext{sink, pool, plan, producer, controls, feed, geometry,
                                                       std::make_shared<WriteRunState>(loop, window_count), loop});
    WriteRunState& state = *run->state;
    if (feed != nullptr) {
        state.front.emplace(run->geometry, plan);
    }

    std::size_t acquired = 0;
    std::size_t next_side_job = 0;
    std::size_t posted = 0;
    for (; posted < window_count; ++posted) {
        if (state.should_stop(controls, sink.name())) {
            break;
        }
        // Window k and the next one: a whole piece of window k may run on into it.
        const std::size_t needed = std::min(posted + 2, window_count);
        while (acquired < needed) {
            SlotLease lease = co_await ring.acquire();
            WindowSlot& window = state.windows[acquired];
            window.lease = std::move(lease);
            window.pending.store(1 + ((acquired > 0 && straddles_end[acquired - 1]) ? 1 : 0));
            ++acquired;
        }
        if (feed != nullptr) {
            auto waiting = wait_for_feed(run, geometry.end(posted));
            if (!co_await std::move(waiting)) {
                break;
            }
        }
        while (next_side_job < plan.side_jobs.size() &&
               plan.side_jobs[next_side_job].start_offset_bytes < geometry.end(posted)) {
            post_side_job(run, plan.side_jobs[next_side_job++]);
        }
        post_window(run, posted, straddles_end[posted]);
    }
    // Windows whose own job never ran (failure, cancel): drop their share so the slots return.
    for (std::size_t k = posted; k < acquired; ++k) {
        finish_share(run, k);
    }
    while (!state.has_failed() && next_side_job < plan.side_jobs.size()) {
        post_side_job(run, plan.side_jobs[next_side_job++]);
    }

    co_await ring.wait_all_released();
    co_await state.wait_for_work();
    // A window's write coroutine gives its slot back last, after counting its bytes: all done.
    if (state.first_error()) {
        co_return *state.first_error();
    }
    state.report_progress(controls, plan.length_bytes, true);
    WriteStats stats;
    stats.bytes_written = state.bytes_done();
    stats.windows = window_count;
    stats.seconds = state.seconds();
    co_return stats;
}

} // namespace ringload
