// io/src/network_source.hpp
//
// What every network source (HTTP/1.1, HTTP/2, Redis) shares as a Source: byte alignment, one
// read path for bulk and small reads, and any destination accepted, so that the engine can have
// large tensors' bytes read straight into place (ReadTarget::in_place).
// Thread: the loop thread.
#pragma once

#include "ringload/engine/source.hpp"

#include <memory>

namespace ringload {

class NetworkSource : public Source {
public:
    std::size_t alignment_bytes() const final { return 1; }
    bool accepts_any_destination() const final { return true; }

    Task<Result<std::size_t>> read_some_at(std::uint64_t offset_bytes, ReadTarget target) final {
        auto read = read_range(offset_bytes, target.bytes());
        co_return co_await std::move(read);
    }
    Task<Result<std::size_t>> read_small_at(std::uint64_t offset_bytes, std::span<std::byte> dst) final {
        auto read = read_range(offset_bytes, dst);
        co_return co_await std::move(read);
    }

protected:
    // Up to dst.size() bytes at offset_bytes (fewer when cut short: the engine asks again).
    virtual Task<Result<std::size_t>> read_range(std::uint64_t offset_bytes, std::span<std::byte> dst) = 0;
};

// Runs a new source's open() (a coroutine returning Result<void>) and hands it out as a Source.
template <class ConcreteSource>
Task<Result<std::unique_ptr<Source>>> open_and_hand_out(std::unique_ptr<ConcreteSource> source) {
    auto opening = source->open();
    auto opened = co_await std::move(opening);
    if (!opened) {
        co_return opened.error();
    }
    co_return std::unique_ptr<Source>(std::move(source));
}

} // namespace ringload
