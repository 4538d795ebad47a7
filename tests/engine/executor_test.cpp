// tests/engine/executor_test.cpp
//
// Runs plans through the real executor, ring and worker pool over a FakeSource with a seeded
// fault plan, and checks that every planned byte reaches the handler exactly once and intact,
// that failures stop the run with the source's error, and that cancellation ends it cleanly.

#include "ringload/engine/executor.hpp"
#include "../support/fake_source.hpp"
#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace ringload {
namespace {

using testing::FakeSource;
using testing::FakeSourceOptions;
using testing::pattern_byte;

// Counts, per source byte, how often it was delivered, and checks its value.
class CountingHandler final : public ChunkHandler {
public:
    explicit CountingHandler(std::uint64_t size) : deliveries_(size, 0) {}

    Result<void> process(const ChunkPtr& chunk) override {
        std::lock_guard lock(mutex_);
        auto bytes = chunk->bytes();
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            std::uint64_t offset = chunk->source_offset_bytes() + i;
            ++deliveries_[offset];
            if (bytes[i] != pattern_byte(offset)) {
                ++corrupt_;
            }
        }
        ++chunks_;
        if (fail_after_chunks_ && chunks_ == *fail_after_chunks_) {
            return fail(errc::hash_mismatch, "handler refused chunk " + std::to_string(chunks_));
        }
        return {};
    }
    Result<void> finish() override {
        finished_ = true;
        return {};
    }

    std::vector<int> deliveries_;
    std::size_t corrupt_ = 0;
    std::size_t chunks_ = 0;
    bool finished_ = false;
    std::optional<std::size_t> fail_after_chunks_;

private:
    std::mutex mutex_;
};

struct Harness {
    explicit Harness(FakeSourceOptions options, BufferRingOptions ring_options = {4, 8192})
        : source(options), ring(BufferRing::create(loop, ring_options).value()), pool(2) {}

    Result<RunStats> run(const Plan& plan, ChunkHandler& handler, RunControls controls = {}) {
        return testing::run_to_completion(loop, run_plan(source, *ring, pool, plan, handler, std::move(controls)));
    }

    boost::asio::io_context loop;
    FakeSource source;
    std::unique_ptr<BufferRing> ring;
    WorkerPool pool;
};

TEST(Executor, DeliversEveryPlannedByteOnceDespiteShortReads) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::uint64_t size = 200'000;
    Harness harness({.size_bytes = size, .alignment_bytes = 1, .seed = seed, .short_reads = true});
    Plan plan{{{17, 50'000}, {50'017, 3}, {70'001, 129'999}}};
    CountingHandler handler(size);
    auto stats = harness.run(plan, handler);
    ASSERT_TRUE(stats) << stats.error().message();
    EXPECT_TRUE(handler.finished_);
    EXPECT_EQ(handler.corrupt_, 0u);
    EXPECT_EQ(stats->bytes_read, plan.total_bytes());
    for (std::uint64_t offset = 0; offset < size; ++offset) {
        bool planned = (offset >= 17 && offset < 50'020) || offset >= 70'001;
        ASSERT_EQ(handler.deliveries_[offset], planned ? 1 : 0) << "offset " << offset;
    }
    EXPECT_EQ(harness.ring->free_count(), harness.ring->slot_count());
}

// Plan::read_first: that range's chunks come first (a small tensor handed over early), then the
// others in order; every byte still once.
TEST(Executor, ReadsTheReadFirstRangeBeforeTheOthers) {
    const std::uint64_t size = 80'000;
    Harness harness({.size_bytes = size}, {1, 8192}); // one slot: chunks are handled in the order read
    Plan plan{{{0, 40'000}, {40'000, 5'000}, {45'000, 30'000}}, 1};
    class Order final : public ChunkHandler {
    public:
        Result<void> process(const ChunkPtr& chunk) override {
            std::lock_guard lock(mutex);
            offsets.push_back(chunk->source_offset_bytes());
            return {};
        }
        Result<void> finish() override { return {}; }
        std::mutex mutex;
        std::vector<std::uint64_t> offsets;
    } order;
    auto stats = harness.run(plan, order);
    ASSERT_TRUE(stats) << stats.error().message();
    EXPECT_EQ(stats->bytes_read, 75'000U);
    EXPECT_EQ(order.offsets,
              (std::vector<std::uint64_t>{40'000, 0, 8192, 16384, 24576, 32768, 45'000, 53'192, 61'384, 69'576}));
}

// Plan::taper_end: the last two rings' worth of the plan comes in quarter-slot windows (an
// in-order hash then waits for less at the end); every byte still once, in order.
TEST(Executor, ReadsATaperedEndInQuarterSlots) {
    const std::uint64_t size = 80'000;
    Harness harness({.size_bytes = size}, {1, 8192}); // one slot: chunks are handled in the order read
    Plan plan{{{0, size}}, std::nullopt, true};
    class Windows final : public ChunkHandler {
    public:
        Result<void> process(const ChunkPtr& chunk) override {
            std::lock_guard lock(mutex);
            seen.emplace_back(chunk->source_offset_bytes(), chunk->bytes().size());
            return {};
        }
        Result<void> finish() override { return {}; }
        std::mutex mutex;
        std::vector<std::pair<std::uint64_t, std::size_t>> seen;
    } windows;
    auto stats = harness.run(plan, windows);
    ASSERT_TRUE(stats) << stats.error().message();
    EXPECT_EQ(stats->bytes_read, size);
    // Whole slots until 16,384 bytes (2 x 1 slot x 8192) before the end, then 2048 at a time.
    std::vector<std::pair<std::uint64_t, std::size_t>> expected;
    std::uint64_t at = 0;
    for (; size - at > 16'384; at += 8192) {
        expected.emplace_back(at, 8192);
    }
    for (; at < size; at += 2048) {
        expected.emplace_back(at, static_cast<std::size_t>(std::min<std::uint64_t>(2048, size - at)));
    }
    EXPECT_EQ(windows.seen, expected);
    EXPECT_EQ(expected.size(), 8u + 8u); // 8 slots' worth (to 65,536), then 14,464 bytes in 8 windows
}

TEST(Executor, AlignsReadsForDirectSourcesAndHandsOutOnlyPlannedBytes) {
    const std::uint64_t size = 100'000; // not a multiple of the alignment: the last read is short
    Harness harness({.size_bytes = size, .alignment_bytes = 4096});
    Plan plan{{{4095, 95'905}}};
    CountingHandler handler(size);
    auto stats = harness.run(plan, handler);
    ASSERT_TRUE(stats) << stats.error().message();
    EXPECT_EQ(handler.corrupt_, 0u);
    for (std::uint64_t offset = 0; offset < size; ++offset) {
        ASSERT_EQ(handler.deliveries_[offset], offset >= 4095 ? 1 : 0) << "offset " << offset;
    }
}

TEST(Executor, ReportsTruncationWhenTheSourceEndsBeforeThePlan) {
    Harness harness({.size_bytes = 10'000});
    Plan plan{{{0, 20'000}}};
    CountingHandler handler(20'000);
    auto stats = harness.run(plan, handler);
    ASSERT_FALSE(stats);
    EXPECT_EQ(stats.error().code, errc::truncated);
    EXPECT_NE(stats.error().detail.find("fake://"), std::string::npos);
    EXPECT_FALSE(handler.finished_);
    EXPECT_EQ(harness.ring->free_count(), harness.ring->slot_count());
}

TEST(Executor, StopsAtTheFirstSourceErrorAndReturnsEverySlot) {
    Harness harness({.size_bytes = 1'000'000, .fail_at_offset = 300'000});
    Plan plan{{{0, 1'000'000}}};
    CountingHandler handler(1'000'000);
    auto stats = harness.run(plan, handler);
    ASSERT_FALSE(stats);
    EXPECT_EQ(stats.error().code, errc::io_error);
    EXPECT_NE(stats.error().detail.find("300000"), std::string::npos);
    EXPECT_EQ(harness.ring->free_count(), harness.ring->slot_count());
    // Bounded by the ring: nothing far past the failure was even read.
    EXPECT_LT(harness.source.reads, 300'000 / 8192 + 2 * harness.ring->slot_count());
}

TEST(Executor, StopsWhenTheHandlerFails) {
    Harness harness({.size_bytes = 1'000'000});
    Plan plan{{{0, 1'000'000}}};
    CountingHandler handler(1'000'000);
    handler.fail_after_chunks_ = 3;
    auto stats = harness.run(plan, handler);
    ASSERT_FALSE(stats);
    EXPECT_EQ(stats.error().code, errc::hash_mismatch);
    EXPECT_LT(handler.chunks_, 20u);
}

TEST(Executor, CancelEndsTheRunWithCancelled) {
    Harness harness({.size_bytes = 4'000'000});
    Plan plan{{{0, 4'000'000}}};
    CountingHandler handler(4'000'000);
    CancelToken cancel;
    RunControls controls;
    controls.cancel = &cancel;
    std::uint64_t reports = 0;
    controls.progress = [&](const Progress& progress) {
        ++reports;
        if (progress.bytes_done > 0) {
            cancel.cancel();
        }
    };
    // Progress is throttled; cancel from the first chunk the handler sees as well.
    struct CancellingHandler : ChunkHandler {
        CountingHandler& inner;
        CancelToken& cancel;
        CancellingHandler(CountingHandler& i, CancelToken& c) : inner(i), cancel(c) {}
        Result<void> process(const ChunkPtr& chunk) override {
            cancel.cancel();
            return inner.process(chunk);
        }
        Result<void> finish() override { return inner.finish(); }
    } cancelling(handler, cancel);
    auto stats = harness.run(plan, cancelling, controls);
    ASSERT_FALSE(stats);
    EXPECT_EQ(stats.error().code, errc::cancelled);
    EXPECT_LT(handler.chunks_, 4'000'000u / 8192);
    EXPECT_EQ(harness.ring->free_count(), harness.ring->slot_count());
}

// Holds every chunk until the run says its reads are done: the ring has a slot for each read,
// so the reads all come in while the workers still hold their chunks.
class WaitsForReadsDone final : public ChunkHandler {
public:
    explicit WaitsForReadsDone(CountingHandler& inner) : inner_(inner) {}
    void reads_done() {
        std::lock_guard lock(mutex_);
        ++reads_done_calls_;
        chunks_before_reads_done_ = chunks_processed_;
        changed_.notify_all();
    }
    Result<void> process(const ChunkPtr& chunk) override {
        std::unique_lock lock(mutex_);
        if (!changed_.wait_for(lock, std::chrono::seconds(10), [&] { return reads_done_calls_ > 0; })) {
            return fail(errc::io_error, "reads_done never came while chunks waited");
        }
        ++chunks_processed_;
        lock.unlock();
        return inner_.process(chunk);
    }
    Result<void> finish() override { return inner_.finish(); }

    int reads_done_calls_ = 0;
    std::size_t chunks_before_reads_done_ = 0;

private:
    CountingHandler& inner_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::size_t chunks_processed_ = 0;
};

TEST(Executor, SaysOnceThatTheReadsAreDoneBeforeTheWorkersAre) {
    const std::uint64_t size = 200'000; // 25 windows of 8 KiB, 32 slots
    Harness harness({.size_bytes = size, .alignment_bytes = 4096}, {32, 8192});
    Plan plan{{{100, 150'000}, {160'000, 39'000}}};
    CountingHandler counting(size);
    WaitsForReadsDone handler(counting);
    RunControls controls;
    controls.reads_done = [&] { handler.reads_done(); };
    auto stats = harness.run(plan, handler, controls);
    ASSERT_TRUE(stats) << stats.error().message();
    EXPECT_EQ(handler.reads_done_calls_, 1);
    EXPECT_EQ(handler.chunks_before_reads_done_, 0u); // every read was in before any chunk was processed
    EXPECT_EQ(counting.corrupt_, 0u);
    for (std::uint64_t offset = 0; offset < size; ++offset) {
        const bool planned = (offset >= 100 && offset < 150'100) || (offset >= 160'000 && offset < 199'000);
        ASSERT_EQ(counting.deliveries_[offset], planned ? 1 : 0) << "byte " << offset;
    }
}

// Takes every byte in place, into `memory`.
class InPlaceHandler final : public ChunkHandler {
public:
    InPlaceHandler(std::vector<std::byte>& memory, ChunkHandler& inner) : memory_(memory), inner_(inner) {}
    std::vector<ReadRange> in_place_ranges(std::size_t) const override { return {{0, memory_.size()}}; }
    std::byte* in_place_destination(std::uint64_t offset_bytes) const override { return memory_.data() + offset_bytes; }
    Result<void> process(const ChunkPtr& chunk) override { return inner_.process(chunk); }
    Result<void> finish() override { return inner_.finish(); }

private:
    std::vector<std::byte>& memory_;
    ChunkHandler& inner_;
};

// A read in place gives its slot back when its bytes are in, not when a worker has looked at
// them: with two slots and workers that hold every chunk until the last read is in, the reads
// still all come in (with the slots held to the end, the run would wait forever).
TEST(Executor, ReadsInPlaceGoOnWhileTheWorkersHoldTheirChunks) {
    const std::uint64_t size = 64 * 1024;
    Harness harness({.size_bytes = size, .any_destination = true}, {2, 4096});
    std::vector<std::byte> memory(size);
    CountingHandler counting(size);
    WaitsForReadsDone waiting(counting);
    InPlaceHandler handler(memory, waiting);
    RunControls controls;
    controls.reads_done = [&] { waiting.reads_done(); };
    auto stats = harness.run(Plan{{{0, size}}}, handler, controls);
    ASSERT_TRUE(stats) << stats.error().message();
    EXPECT_EQ(stats->bytes_in_place, size);
    EXPECT_EQ(waiting.reads_done_calls_, 1);
    EXPECT_EQ(counting.corrupt_, 0u);
    for (std::uint64_t offset = 0; offset < size; ++offset) {
        ASSERT_EQ(memory[offset], testing::pattern_byte(offset)) << "byte " << offset;
        ASSERT_EQ(counting.deliveries_[offset], 1) << "byte " << offset;
    }
    EXPECT_EQ(harness.ring->free_count(), harness.ring->slot_count());
}

TEST(Executor, DoesNotSayTheReadsAreDoneWhenTheRunFails) {
    Harness harness({.size_bytes = 1'000'000, .fail_at_offset = 900'000});
    Plan plan{{{0, 1'000'000}}};
    CountingHandler handler(1'000'000);
    int reads_done_calls = 0;
    RunControls controls;
    controls.reads_done = [&] { ++reads_done_calls; };
    auto stats = harness.run(plan, handler, controls);
    ASSERT_FALSE(stats);
    EXPECT_EQ(stats.error().code, errc::io_error);
    EXPECT_EQ(reads_done_calls, 0);
}

TEST(Executor, SaysTheReadsAreDoneAtOnceForAnEmptyPlan) {
    Harness harness({.size_bytes = 1'000});
    CountingHandler handler(1'000);
    int reads_done_calls = 0;
    RunControls controls;
    controls.reads_done = [&] { ++reads_done_calls; };
    auto stats = harness.run(Plan{}, handler, controls);
    ASSERT_TRUE(stats) << stats.error().message();
    EXPECT_EQ(reads_done_calls, 1);
}

TEST(BufferRing, RefusesSlotSizesThatAreNotPageMultiples) {
    boost::asio::io_context loop;
    auto ring = BufferRing::create(loop, {4, 1000});
    ASSERT_FALSE(ring);
    EXPECT_EQ(ring.error().code, errc::invalid_argument);
}

TEST(BufferRing, AcquireWaitsForARelease) {
    boost::asio::io_context loop;
    auto ring = BufferRing::create(loop, {1, 4096}).value();
    auto first = ring->try_acquire();
    ASSERT_TRUE(first);
    EXPECT_FALSE(ring->try_acquire());
    // A lease dropped on another thread comes back through the loop.
    std::thread releaser([lease = std::move(*first)]() mutable { lease = SlotLease(); });
    releaser.join();
    auto second = testing::run_to_completion(loop, ring->acquire());
    EXPECT_TRUE(second.valid());
}

} // namespace
} // namespace ringload
