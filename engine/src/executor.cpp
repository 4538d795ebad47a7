// engine/src/executor.cpp
#include "ringload/engine/executor.hpp"

#include "run_tracker.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <chrono>
#include <limits>
#include <mutex>

namespace ringload {
namespace {

// A slot-sized window of the source: what is read (aligned) and what of it the plan wants.
//
//  source:     |....[=====useful=====]....|
//              ^read_offset               ^read_offset + read_length (aligned)
struct ChunkWindow {
    std::uint64_t read_offset_bytes = 0;
    std::size_t read_length_bytes = 0;
    std::uint64_t useful_offset_bytes = 0;
    std::size_t useful_length_bytes = 0;
    bool in_place = false; // inside one of the handler's in_place_ranges (aligned for the source)
};

// Shared by the scheduler, the read coroutines and the workers of one run.
using RunState = RunTracker;

std::uint64_t align_down(std::uint64_t value, std::uint64_t alignment) {
    return value / alignment * alignment;
}
std::uint64_t align_up(std::uint64_t value, std::uint64_t alignment) {
    return (value + alignment - 1) / alignment * alignment;
}

// The window size at `position`: a slot, or a quarter of one in the tapered end of the plan
// (Plan::taper_end: the last two rings' worth of bytes).
struct WindowSizes {
    WindowSizes(const Plan& plan, const BufferRing& ring, std::size_t alignment)
        : slot_bytes(ring.slot_size_bytes()),
          taper_window_bytes(std::max<std::uint64_t>(2 * alignment, align_down(slot_bytes / 4, alignment))) {
        if (plan.taper_end && !plan.ranges.empty()) {
            const std::uint64_t taper_bytes = 2 * std::uint64_t{ring.slot_count()} * slot_bytes;
            const std::uint64_t end = plan.ranges.back().end_bytes();
            taper_from_bytes = end > taper_bytes ? end - taper_bytes : 0;
        }
    }
    std::uint64_t at(std::uint64_t position) const {
        return position >= taper_from_bytes ? taper_window_bytes : slot_bytes;
    }

    std::uint64_t slot_bytes;
    std::uint64_t taper_window_bytes; // a multiple of the alignment, at most a slot (run_plan checks)
    std::uint64_t taper_from_bytes = std::numeric_limits<std::uint64_t>::max();
};

// Splits every range into windows of at most one slot (WindowSizes), aligned for the source,
// and cut where an in-place range (sorted) begins or ends so that a window is wholly in one or
// outside all. The windows of plan.read_first come first; `lead_windows` says how many.
std::vector<ChunkWindow> split_into_windows(const Plan& plan, const WindowSizes& sizes, std::size_t alignment,
                                            const std::vector<ReadRange>& in_place, std::size_t& lead_windows) {
    std::vector<ChunkWindow> windows;
    auto next_in_place = in_place.begin();
    std::size_t first_begin = 0; // the windows of plan.read_first
    std::size_t first_end = 0;
    for (std::size_t r = 0; r < plan.ranges.size(); ++r) {
        const ReadRange& range = plan.ranges[r];
        if (plan.read_first == r) {
            first_begin = windows.size();
        }
        std::uint64_t position = range.offset_bytes;
        while (position < range.end_bytes()) {
            while (next_in_place != in_place.end() && next_in_place->end_bytes() <= position) {
                ++next_in_place;
            }
            std::uint64_t segment_end = range.end_bytes();
            bool inside = false;
            if (next_in_place != in_place.end()) {
                inside = next_in_place->offset_bytes <= position;
                segment_end = std::min(segment_end, inside ? next_in_place->end_bytes() : next_in_place->offset_bytes);
            }
            ChunkWindow window;
            window.in_place = inside;
            window.read_offset_bytes = align_down(position, alignment);
            std::uint64_t lead = position - window.read_offset_bytes;
            std::uint64_t useful = std::min<std::uint64_t>(sizes.at(position) - lead, segment_end - position);
            window.useful_offset_bytes = position;
            window.useful_length_bytes = static_cast<std::size_t>(useful);
            // Never past the slot: the slot size is a multiple of the alignment. Past EOF an
            // aligned read just comes back short.
            std::uint64_t read_end = align_up(position + useful, alignment);
            window.read_length_bytes = static_cast<std::size_t>(read_end - window.read_offset_bytes);
            windows.push_back(window);
            position += useful;
        }
        if (plan.read_first == r) {
            first_end = windows.size();
        }
    }
    // Read first, the rest keeping its order.
    std::rotate(windows.begin(), windows.begin() + static_cast<std::ptrdiff_t>(first_begin),
                windows.begin() + static_cast<std::ptrdiff_t>(first_end));
    lead_windows = first_end - first_begin;
    return windows;
}

// Fills one slot with its window (resuming short reads), then hands it to the workers.
Task<void> read_chunk(Source& source, SlotLease slot, ChunkWindow window, WorkerPool& pool, ChunkHandler& handler,
                      std::shared_ptr<RunState> state, const RunControls& controls, std::uint64_t plan_bytes) {
    const std::uint64_t needed = window.useful_offset_bytes + window.useful_length_bytes - window.read_offset_bytes;
    // In place: straight to the bytes' destination; the slot only stands for a read in flight.
    std::byte* in_place = window.in_place ? handler.in_place_destination(window.useful_offset_bytes) : nullptr;
    std::size_t done = 0;
    while (done < needed) {
        if (state->should_stop(controls, source.name())) {
            // The run stopped (failed, or cancelled) before this window's first read or while it
            // came in pieces: asking would only start another request (an abandoned read
            // returns what it had, short; a source serves reads that start after an abandon).
            handler.abandon();
            co_return;
        }
        ReadTarget target{&slot, done, window.read_length_bytes - done,
                          in_place != nullptr ? in_place + done : nullptr};
        auto read = co_await source.read_some_at(window.read_offset_bytes + done, target);
        if (!read) {
            state->record_failure(read.error());
            handler.abandon(); // pieces parked for these bytes must let their slots go
            co_return;
        }
        if (*read == 0) {
            state->record_failure(fail(
                errc::truncated, source.name() + ": the source ends at byte " +
                                     std::to_string(window.read_offset_bytes + done) + " but the data runs to byte " +
                                     std::to_string(window.useful_offset_bytes + window.useful_length_bytes)));
            handler.abandon();
            co_return;
        }
        done += *read;
    }
    if (state->has_failed()) {
        handler.abandon();
        co_return; // the slot goes back when `slot` dies
    }
    std::size_t lead = static_cast<std::size_t>(window.useful_offset_bytes - window.read_offset_bytes);
    if (in_place != nullptr) {
        // The bytes are where they go: the slot only counted the read in flight. Let it go now,
        // not when a worker gets to the chunk: a signed file's hash runs behind its reads (on
        // two cores the workers are all busy hashing), and the next reads must not wait for it.
        slot = SlotLease{};
        state->add_in_place(window.useful_length_bytes);
    }
    auto chunk = std::make_shared<const Chunk>(std::move(slot), window.useful_offset_bytes, lead,
                                               window.useful_length_bytes, in_place);
    state->add_done(window.useful_length_bytes);
    state->read_came_in(controls);
    state->report_progress(controls, plan_bytes, false);

    state->work_started();
    auto loop = co_await asio::this_coro::executor;
    pool.post([chunk = std::move(chunk), &handler, state, loop]() mutable {
        if (!state->has_failed()) {
            auto processed = handler.process(chunk);
            if (!processed) {
                state->record_failure(processed.error());
            }
        }
        if (state->has_failed()) {
            // A failure anywhere (a later read, say) strands pieces parked for this chunk's
            // bytes or for bytes that will never come: let them go, with their slots.
            handler.abandon();
        }
        chunk.reset(); // may release the slot (unless in-order work still holds it)
        // Last: tell the loop this worker no longer touches the handler.
        asio::post(loop, [state] { state->work_ended(); });
    });
}

// What watch_for_stop and its run share: the run ends by setting `over` and waking the watcher.
struct StopWatch {
    explicit StopWatch(asio::any_io_executor loop) : timer(std::move(loop)) {
        timer.expires_at(asio::steady_timer::time_point::max());
    }
    asio::steady_timer timer;
    bool over = false;
};

// Wakes the watcher from any thread: the timer is the loop's, so the cancel goes through it.
std::function<void()> waker_of(asio::any_io_executor loop, std::shared_ptr<StopWatch> watch) {
    return [loop, watch] { asio::post(loop, [watch] { watch->timer.cancel(); }); };
}

// While the run is on: parked until the caller cancels (its CancelToken subscription), the run
// fails (RunTracker::on_stop) or ends; then, if the run stops early, has the source abandon the
// reads in flight, which would otherwise be waited for (a stalled server's). No polling: a
// cancel is seen at once, not at the next read's end. Never touches the source once the run
// is over.
Task<void> watch_for_stop(std::shared_ptr<RunState> state, std::shared_ptr<StopWatch> watch, Source& source,
                          RunControls controls) {
    const std::string name = source.name();
    while (!watch->over) {
        if (state->should_stop(controls, name)) {
            source.abandon_reads();
            co_return;
        }
        auto waited = co_await watch->timer.async_wait(use_task);
        (void)waited;
        watch->timer.expires_at(asio::steady_timer::time_point::max());
    }
}

// Ends the watcher with the run (on every way out of run_plan).
struct EndOfRun {
    std::shared_ptr<StopWatch> watch;
    ~EndOfRun() {
        watch->over = true;
        watch->timer.cancel();
    }
};

} // namespace

Task<Result<RunStats>> run_plan(Source& source, BufferRing& ring, WorkerPool& pool, const Plan& plan,
                                ChunkHandler& handler, RunControls controls) {
    auto loop = co_await asio::this_coro::executor;
    auto state = std::make_shared<RunState>(loop);
    const std::size_t alignment = std::max<std::size_t>(source.alignment_bytes(), 1);
    if (ring.slot_size_bytes() < 2 * alignment) {
        co_return fail(errc::invalid_argument, source.name() + ": ring slots of " +
                                                   std::to_string(ring.slot_size_bytes()) +
                                                   " bytes are smaller than twice the source's alignment (" +
                                                   std::to_string(alignment) + " bytes)");
    }
    const auto in_place =
        source.accepts_any_destination() ? handler.in_place_ranges(alignment) : std::vector<ReadRange>{};
    std::size_t lead_windows = 0;
    const auto windows =
        split_into_windows(plan, WindowSizes(plan, ring, alignment), alignment, in_place, lead_windows);
    const std::uint64_t plan_bytes = plan.total_bytes();
    state->expect_reads(windows.size());
    if (windows.empty() && controls.reads_done) {
        controls.reads_done(); // nothing to read
    }

    auto watch = std::make_shared<StopWatch>(loop);
    RunControls stop_controls; // what the watcher needs: the cancel token, not the progress callback
    stop_controls.cancel = controls.cancel;
    state->on_stop(waker_of(loop, watch));
    const CancelToken::Subscription cancelled_by_caller =
        controls.cancel != nullptr ? controls.cancel->subscribe(waker_of(loop, watch)) : CancelToken::Subscription();
    asio::co_spawn(loop, watch_for_stop(state, watch, source, stop_controls), asio::detached);
    const EndOfRun end_of_run{watch};

    RunStats stats;
    for (std::size_t w = 0; w < windows.size(); ++w) {
        if (state->should_stop(controls, source.name())) {
            break;
        }
        SlotLease slot = co_await ring.acquire();
        if (state->should_stop(controls, source.name())) {
            break; // stopped while it waited for the slot: the window is not asked for
        }
        auto reader = read_chunk(source, std::move(slot), windows[w], pool, handler, state, controls, plan_bytes);
        if (w < std::max<std::size_t>(lead_windows, 1)) {
            // Read alone (the first window, or plan.read_first's): in a queue of a ring's worth of
            // reads the disk would finish it with the others (128 MiB later, ~80 ms on a 1.6 GB/s
            // disk), and the tensor it completes is the first one a streamed load hands over.
            co_await std::move(reader);
        } else {
            asio::co_spawn(loop, std::move(reader), asio::detached);
        }
        ++stats.chunks;
    }
    if (state->has_failed()) {
        handler.abandon(); // pieces parked for predecessors that will never come hold slots
    }
    // Every read and every deferred piece holds a slot: when all are back, all work is done.
    co_await ring.wait_all_released();
    co_await state->wait_for_work();
    if (state->first_error()) {
        co_return *state->first_error();
    }
    RL_CO_TRY_VOID(handler.finish());
    state->report_progress(controls, plan_bytes, true);
    stats.bytes_read = state->bytes_done();
    stats.bytes_in_place = state->bytes_in_place();
    stats.seconds = state->seconds();
    co_return stats;
}

} // namespace ringload
