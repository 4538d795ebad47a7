// tests/engine/hash_stream_test.cpp
//
// HashStream: the process's hashing threads run each stream's jobs once, in the order added,
// one at a time, whatever other streams run beside them; wait_idle() returns when all have run;
// drop() discards what is queued, waits for what runs, and refuses the rest.
#include "ringload/engine/hash_stream.hpp"
#include "ringload/engine/thread_sanitizer.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <random>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace ringload {
namespace {

using namespace std::chrono_literals;

TEST(HashStream, ManyStreamsFromManyThreadsEachHashInOrder) {
    constexpr std::size_t stream_count = 8;
    constexpr std::size_t job_count = 60;
    struct Checked {
        HashStream stream;
        LanedSha256 hash;
        std::vector<std::byte> bytes;
        std::vector<std::size_t> ran; // job numbers, as their `after`s ran
        std::atomic<int> running{0};
        bool overlapped = false;
    };
    std::vector<std::unique_ptr<Checked>> streams;
    for (std::size_t s = 0; s < stream_count; ++s) {
        auto checked = std::make_unique<Checked>();
        std::mt19937_64 random(s);
        checked->bytes.resize(job_count * 70000);
        for (std::byte& b : checked->bytes) {
            b = static_cast<std::byte>(random());
        }
        streams.push_back(std::move(checked));
    }
    std::vector<std::thread> producers;
    for (auto& each : streams) {
        producers.emplace_back([&checked = *each] {
            std::mt19937_64 random(checked.bytes.size());
            std::size_t at = 0;
            for (std::size_t job = 0; job < job_count; ++job) {
                // Uneven pieces, some not a whole number of blocks, the last one what is left.
                const std::size_t length =
                    job + 1 == job_count ? checked.bytes.size() - at : random() % (checked.bytes.size() / job_count);
                auto keep = std::make_shared<int>(0);
                checked.stream.add({{&checked.hash, std::span<const std::byte>(checked.bytes).subspan(at, length)},
                                    keep,
                                    [&checked, job] {
                                        if (checked.running.fetch_add(1) != 0) {
                                            checked.overlapped = true;
                                        }
                                        checked.ran.push_back(job);
                                        checked.running.fetch_sub(1);
                                    }});
                at += length;
            }
        });
    }
    for (std::thread& producer : producers) {
        producer.join();
    }
    for (auto& checked : streams) {
        checked->stream.wait_idle();
        ASSERT_EQ(checked->ran.size(), job_count);
        for (std::size_t job = 0; job < job_count; ++job) {
            EXPECT_EQ(checked->ran[job], job);
        }
        EXPECT_FALSE(checked->overlapped);
        const Sha256Digest got = checked->hash.finish();
        EXPECT_EQ(to_hex(got), to_hex(sha256(checked->bytes)));
    }
}

TEST(HashStream, WhatAJobKeepsIsLetGoOnceItRan) {
    HashStream stream;
    LanedSha256 hash;
    std::vector<std::byte> bytes(1 << 20, std::byte{7});
    auto keep = std::make_shared<int>(0);
    const std::weak_ptr<int> watched = keep;
    stream.add({{&hash, bytes}, std::move(keep), nullptr});
    stream.wait_idle();
    EXPECT_TRUE(watched.expired());
    EXPECT_EQ(to_hex(hash.finish()), to_hex(sha256(bytes)));
}

TEST(HashStream, DropDiscardsWhatIsQueuedWaitsForWhatRunsAndRefusesTheRest) {
    HashStream stream;
    LanedSha256 hash;
    std::vector<std::byte> bytes(4096, std::byte{1});
    std::latch started(1);
    std::atomic<bool> release{false};
    std::atomic<bool> first_done{false};
    std::atomic<int> later_ran{0};
    stream.add({{&hash, bytes}, nullptr, [&] {
                    started.count_down();
                    while (!release.load()) {
                        std::this_thread::sleep_for(1ms);
                    }
                    first_done = true;
                }});
    started.wait(); // the first job runs, and holds its thread until released
    auto queued_keep = std::make_shared<int>(0);
    const std::weak_ptr<int> queued_watched = queued_keep;
    stream.add({{&hash, bytes}, std::move(queued_keep), [&] { ++later_ran; }});
    std::thread dropper([&] { stream.drop(); });
    std::this_thread::sleep_for(50ms);
    EXPECT_FALSE(first_done.load()) << "drop() must wait for the running job";
    release = true;
    dropper.join();
    EXPECT_TRUE(first_done.load());
    EXPECT_TRUE(queued_watched.expired()) << "the queued job's bytes were not let go";
    stream.add({{&hash, bytes}, nullptr, [&] { ++later_ran; }});
    stream.wait_idle();
    EXPECT_EQ(later_ran.load(), 0);
}

// ThreadSanitizer cannot start threads in a child of a threaded process (it dies): the test is
// built without it there, and runs in the dev and asan builds.
#ifndef RINGLOAD_UNDER_TSAN
// A child forked after the parent hashed has none of the parent's threads: its first stream
// starts its own, and its digest is right.
TEST(HashStream, AForkedChildHashesWithThreadsOfItsOwn) {
    std::vector<std::byte> bytes(3 << 20, std::byte{5});
    const std::string expected = to_hex(sha256(bytes));
    {
        HashStream stream;
        LanedSha256 hash;
        stream.add({{&hash, bytes}, nullptr, nullptr});
        stream.wait_idle();
        ASSERT_EQ(to_hex(hash.finish()), expected);
    }
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        HashStream stream;
        LanedSha256 hash;
        stream.add({{&hash, bytes}, nullptr, nullptr});
        stream.wait_idle(); // would hang without threads: the test's timeout says so
        ::_exit(to_hex(hash.finish()) == expected ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "the child's digest differs";
}
#endif

} // namespace
} // namespace ringload
