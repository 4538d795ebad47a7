// engine/include/ringload/engine/kept_pages.hpp
//
// Pages of a file being written that must be finished after the data went out: bytes that
// depend on values known only at the end (hashes, MACs, CRCs) are written first with zeros
// there, their pages are kept as the windows holding them are filled (a PieceProducer's
// window_filled), and once the values are known the finished pages are written again whole
// (no read-modify-write of pages that went to disk with O_DIRECT). The tensorizer writer keeps
// its tensor headers' pages; the torch zip writer its data descriptors and central directory.
//
//  file:  [hdr|data 0 .......|d][hdr|data 1|d][central directory + end]     (torch zip)
//  kept:              [page  ]        [page ] [page][page]
//
// Thread: window_filled() from any worker at once; patch() and pages() after the run.
#pragma once

#include "ringload/error.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

namespace ringload {

constexpr std::uint64_t kept_page_bytes = 4096;

class KeptPages {
public:
    // [begin, end) ranges to keep, sorted and not overlapping.
    explicit KeptPages(std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges) : ranges_(std::move(ranges)) {}

    // A window's final bytes: copies the pages of it that hold kept ranges. Slots are whole
    // pages, so a page never straddles two windows.
    void window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes);
    // Overwrites bytes inside kept ranges; fails if a page was never filled.
    Result<void> patch(std::uint64_t offset_bytes, std::span<const std::byte> bytes);
    // (file offset, 4 KiB of 4 KiB-aligned memory), in file order.
    std::vector<std::pair<std::uint64_t, std::span<const std::byte>>> pages() const;

private:
    struct alignas(kept_page_bytes) Page {
        std::array<std::byte, kept_page_bytes> bytes;
    };
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_;
    mutable std::mutex mutex_;
    std::map<std::uint64_t, Page> pages_; // guarded by mutex_
};

} // namespace ringload
