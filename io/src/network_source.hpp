// io/src/network_source.hpp
//
// What every network source (HTTP/1.1, HTTP/2, Redis) shares as a Source: byte alignment, one
// read path for bulk and small reads, and any destination accepted, so that the engine can have
// large tensors' bytes read straight into place (ReadTarget::in_place).
// Thread: the loop thread.
#pragma once

#include "ringload/engine/source.hpp"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

namespace ringload {

class NetworkSource : public Source {
public:
    std::size_t alignment_bytes() const final { return 1; }
    bool accepts_any_destination() const final { return true; }

    Task<Result<std::size_t>> read_some_at(std::uint64_t offset_bytes, ReadTarget target) final {
        auto read = read_range(offset_bytes, target.bytes());
        co_return co_await std::move(read);
    }
    // Metadata reads inside the head that open() fetched cost no request (format detection,
    // a safetensors header, a torch data.pkl near the front).
    Task<Result<std::size_t>> read_small_at(std::uint64_t offset_bytes, std::span<std::byte> dst) final {
        if (offset_bytes < head_.size() && !dst.empty()) {
            const auto count =
                static_cast<std::size_t>(std::min<std::uint64_t>(dst.size(), head_.size() - offset_bytes));
            std::memcpy(dst.data(), head_.data() + offset_bytes, count);
            co_return count;
        }
        auto read = read_range(offset_bytes, dst);
        co_return co_await std::move(read);
    }

    // What open() asks for first: the size comes with it, and the head serves later small
    // reads, so that an index needs few range requests (a torch zip over HTTP: 3 at most).
    static constexpr std::size_t head_bytes = 64 << 10;

protected:
    // Keeps the bytes open()'s first read returned (the file's first bytes).
    void keep_head(std::span<const std::byte> bytes) { head_.assign(bytes.begin(), bytes.end()); }

    // Up to dst.size() bytes at offset_bytes (fewer when cut short: the engine asks again).
    virtual Task<Result<std::size_t>> read_range(std::uint64_t offset_bytes, std::span<std::byte> dst) = 0;

private:
    std::vector<std::byte> head_;
};

// Runs a new source's open() (a coroutine returning Result<void>) and hands it out as a Source.
template <class ConcreteSource>
Task<Result<std::unique_ptr<Source>>> open_and_hand_out(std::unique_ptr<ConcreteSource> source) {
    auto opening = source->open();
    RL_CO_TRY_VOID(co_await std::move(opening));
    co_return std::unique_ptr<Source>(std::move(source));
}

} // namespace ringload
