// engine/src/kept_pages.cpp
#include "ringload/engine/kept_pages.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace ringload {

void KeptPages::window_filled(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
    const std::uint64_t window_end = offset_bytes + bytes.size();
    auto it = std::partition_point(ranges_.begin(), ranges_.end(),
                                   [&](const auto& range) { return range.second <= offset_bytes; });
    std::lock_guard lock(mutex_);
    for (; it != ranges_.end() && it->first < window_end; ++it) {
        const std::uint64_t from = std::max(it->first, offset_bytes);
        const std::uint64_t to = std::min(it->second, window_end);
        for (std::uint64_t page = from / kept_page_bytes * kept_page_bytes; page < to; page += kept_page_bytes) {
            auto [slot, inserted] = pages_.try_emplace(page);
            if (!inserted) {
                continue;
            }
            // The file's last page may be short: the rest is zeros, trimmed at commit.
            const auto available = static_cast<std::size_t>(std::min(kept_page_bytes, window_end - page));
            slot->second.bytes.fill(std::byte{0});
            std::memcpy(slot->second.bytes.data(), bytes.data() + (page - offset_bytes), available);
        }
    }
}

Result<void> KeptPages::patch(std::uint64_t offset_bytes, std::span<const std::byte> bytes) {
    std::lock_guard lock(mutex_);
    std::size_t done = 0;
    while (done < bytes.size()) {
        const std::uint64_t at = offset_bytes + done;
        auto page = pages_.find(at / kept_page_bytes * kept_page_bytes);
        if (page == pages_.end()) {
            return fail(errc::io_error, "the page holding byte " + std::to_string(at) + " was never written");
        }
        const auto in_page = static_cast<std::size_t>(at - page->first);
        const std::size_t length = std::min<std::size_t>(bytes.size() - done, kept_page_bytes - in_page);
        std::memcpy(page->second.bytes.data() + in_page, bytes.data() + done, length);
        done += length;
    }
    return {};
}

std::vector<std::pair<std::uint64_t, std::span<const std::byte>>> KeptPages::pages() const {
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::uint64_t, std::span<const std::byte>>> out;
    for (const auto& [offset, page] : pages_) {
        out.emplace_back(offset, page.bytes);
    }
    return out;
}

} // namespace ringload
