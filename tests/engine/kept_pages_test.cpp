// tests/engine/kept_pages_test.cpp
//
// KeptPages, the writers' helper for bytes finished after the data went out: only the pages
// that hold kept ranges are copied as windows are filled, a patch lands inside them (across a
// page boundary too), a patch of a page never filled fails, the file's short last page is
// zero-padded, and pages() hands them back in file order, 4 KiB-aligned.
#include "ringload/engine/kept_pages.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace ringload {
namespace {

// The file's byte at `offset` as written in the first pass.
std::byte file_byte(std::uint64_t offset) {
    return static_cast<std::byte>((offset * 131 + 7) & 0xFF);
}

std::vector<std::byte> file_bytes(std::uint64_t from, std::uint64_t length) {
    std::vector<std::byte> bytes(static_cast<std::size_t>(length));
    for (std::uint64_t i = 0; i < length; ++i) {
        bytes[static_cast<std::size_t>(i)] = file_byte(from + i);
    }
    return bytes;
}

std::vector<std::uint64_t> offsets_of(const KeptPages& kept) {
    std::vector<std::uint64_t> offsets;
    for (const auto& [offset, page] : kept.pages()) {
        offsets.push_back(offset);
    }
    return offsets;
}

TEST(KeptPages, KeepsOnlyThePagesThatHoldRanges) {
    // Ranges in page 0, across pages 2-3, and inside page 5; windows of two pages each.
    KeptPages kept({{100, 200},
                    {3 * kept_page_bytes - 10, 3 * kept_page_bytes + 10},
                    {5 * kept_page_bytes, 5 * kept_page_bytes + 1}});
    for (std::uint64_t window = 0; window < 4; ++window) {
        const std::uint64_t offset = window * 2 * kept_page_bytes;
        const auto bytes = file_bytes(offset, 2 * kept_page_bytes);
        kept.window_filled(offset, bytes);
    }
    EXPECT_EQ(offsets_of(kept),
              (std::vector<std::uint64_t>{0, 2 * kept_page_bytes, 3 * kept_page_bytes, 5 * kept_page_bytes}));
    for (const auto& [offset, page] : kept.pages()) {
        ASSERT_EQ(page.size(), kept_page_bytes);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(page.data()) % kept_page_bytes, 0u) << "page at " << offset;
        EXPECT_EQ(page[0], file_byte(offset));
        EXPECT_EQ(page[kept_page_bytes - 1], file_byte(offset + kept_page_bytes - 1));
    }
}

TEST(KeptPages, PatchesAcrossAPageBoundary) {
    const std::uint64_t start = kept_page_bytes - 3;
    KeptPages kept({{start, start + 6}});
    const auto bytes = file_bytes(0, 2 * kept_page_bytes);
    kept.window_filled(0, bytes);
    const std::vector<std::byte> patch(6, std::byte{0xAB});
    ASSERT_TRUE(kept.patch(start, patch));

    const auto pages = kept.pages();
    ASSERT_EQ(pages.size(), 2u);
    EXPECT_EQ(pages[0].second[kept_page_bytes - 4], file_byte(kept_page_bytes - 4));
    for (std::uint64_t i = 0; i < 3; ++i) {
        EXPECT_EQ(pages[0].second[kept_page_bytes - 3 + i], std::byte{0xAB});
        EXPECT_EQ(pages[1].second[i], std::byte{0xAB});
    }
    EXPECT_EQ(pages[1].second[3], file_byte(kept_page_bytes + 3));
}

TEST(KeptPages, PatchOfAPageNeverFilledFails) {
    KeptPages kept({{10, 20}, {2 * kept_page_bytes + 10, 2 * kept_page_bytes + 20}});
    const auto bytes = file_bytes(0, kept_page_bytes);
    kept.window_filled(0, bytes); // only the first window came back
    const std::vector<std::byte> patch(4, std::byte{1});
    EXPECT_TRUE(kept.patch(12, patch));
    auto missing = kept.patch(2 * kept_page_bytes + 12, patch);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, errc::io_error);
    EXPECT_NE(missing.error().detail.find(std::to_string(2 * kept_page_bytes + 12)), std::string::npos)
        << missing.error().detail;
}

TEST(KeptPages, ShortLastPageIsZeroPadded) {
    const std::uint64_t file_end = kept_page_bytes + 100;
    KeptPages kept({{kept_page_bytes + 50, file_end}});
    const auto bytes = file_bytes(kept_page_bytes, file_end - kept_page_bytes); // the last, short window
    kept.window_filled(kept_page_bytes, bytes);
    const auto pages = kept.pages();
    ASSERT_EQ(pages.size(), 1u);
    EXPECT_EQ(pages[0].first, kept_page_bytes);
    EXPECT_EQ(pages[0].second[99], file_byte(file_end - 1));
    for (std::size_t i = 100; i < kept_page_bytes; ++i) {
        ASSERT_EQ(pages[0].second[i], std::byte{0}) << "byte " << i;
    }
}

TEST(KeptPages, WindowsFilledFromManyThreads) {
    constexpr std::uint64_t windows = 64;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges;
    for (std::uint64_t w = 0; w < windows; ++w) {
        ranges.emplace_back(w * kept_page_bytes + 8, w * kept_page_bytes + 16);
    }
    KeptPages kept(ranges);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&kept, t] {
            for (std::uint64_t w = static_cast<std::uint64_t>(t); w < windows; w += 4) {
                const auto bytes = file_bytes(w * kept_page_bytes, kept_page_bytes);
                kept.window_filled(w * kept_page_bytes, bytes);
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    const auto pages = kept.pages();
    ASSERT_EQ(pages.size(), windows);
    for (std::uint64_t w = 0; w < windows; ++w) {
        EXPECT_EQ(pages[w].first, w * kept_page_bytes);
        EXPECT_EQ(pages[w].second[8], file_byte(w * kept_page_bytes + 8));
    }
}

} // namespace
} // namespace ringload
