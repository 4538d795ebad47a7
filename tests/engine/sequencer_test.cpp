// tests/engine/sequencer_test.cpp
//
// Pieces submitted from many threads in random order must run exactly once each, in offset
// order, and never two at a time.
#include "ringload/engine/sequencer.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>
#include <vector>

namespace ringload {
namespace {

TEST(Sequencer, RunsPiecesInOffsetOrderWhateverTheArrivalOrder) {
    constexpr int piece_count = 2000;
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::vector<int> order(piece_count);
    for (int i = 0; i < piece_count; ++i) {
        order[i] = i;
    }
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));

    Sequencer sequencer(100);
    std::vector<int> ran;
    std::atomic<int> running{0};
    std::atomic<bool> overlapped{false};
    std::atomic<int> next{0};
    auto submit_some = [&] {
        for (int k = next++; k < piece_count; k = next++) {
            int piece = order[k];
            // Pieces have different lengths: piece i covers [100 + 3i, 100 + 3i + 3).
            sequencer.submit(100 + 3 * static_cast<std::uint64_t>(piece), 3, [&, piece] {
                if (running.fetch_add(1) != 0) {
                    overlapped = true;
                }
                ran.push_back(piece);
                running.fetch_sub(1);
            });
        }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back(submit_some);
    }
    for (auto& thread : threads) {
        thread.join();
    }
    ASSERT_EQ(ran.size(), static_cast<std::size_t>(piece_count));
    EXPECT_FALSE(overlapped.load());
    for (int i = 0; i < piece_count; ++i) {
        ASSERT_EQ(ran[i], i);
    }
}

TEST(Sequencer, ParksAPieceUntilItsPredecessorArrives) {
    Sequencer sequencer(0);
    std::vector<int> ran;
    sequencer.submit(10, 5, [&] { ran.push_back(2); });
    EXPECT_TRUE(ran.empty());
    sequencer.submit(0, 10, [&] { ran.push_back(1); });
    EXPECT_EQ(ran, (std::vector<int>{1, 2}));
}

} // namespace
} // namespace ringload
