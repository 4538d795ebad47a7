// tests/support/fake_source.hpp
//
// An in-memory Source with a seeded fault plan: reads complete short at random points, and
// may fail at a chosen offset. The pattern byte at offset i is pattern_byte(i).
#pragma once

#include "ringload/engine/source.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <random>
#include <string>

namespace ringload::testing {

inline std::byte pattern_byte(std::uint64_t offset) {
    return static_cast<std::byte>((offset * 2654435761u) >> 13);
}

struct FakeSourceOptions {
    std::uint64_t size_bytes = 0;
    std::size_t alignment_bytes = 1;
    unsigned seed = 0;
    bool short_reads = false;                    // complete each read at a random length
    std::optional<std::uint64_t> fail_at_offset; // a read covering this offset fails
    bool any_destination = false;                // reads land where the handler asks (in place)
};

class FakeSource final : public Source {
public:
    explicit FakeSource(FakeSourceOptions options) : options_(options), random_(options.seed), name_("fake://") {}

    const std::string& name() const override { return name_; }
    std::uint64_t size_bytes() const override { return options_.size_bytes; }
    std::size_t alignment_bytes() const override { return options_.alignment_bytes; }
    std::string describe() const override { return "fake"; }
    bool accepts_any_destination() const override { return options_.any_destination; }

    Task<Result<std::size_t>> read_some_at(std::uint64_t offset, ReadTarget target) override {
        auto dst = target.bytes();
        // Complete on a later turn of the loop, like real I/O.
        auto loop = co_await boost::asio::this_coro::executor;
        co_await boost::asio::post(loop, boost::asio::use_awaitable);
        co_return fill(offset, dst);
    }

    Task<Result<std::size_t>> read_small_at(std::uint64_t offset, std::span<std::byte> dst) override {
        co_return fill(offset, dst);
    }

    std::uint64_t reads = 0;

private:
    Result<std::size_t> fill(std::uint64_t offset, std::span<std::byte> dst) {
        ++reads;
        if (offset >= options_.size_bytes) {
            return std::size_t{0};
        }
        std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(dst.size(), options_.size_bytes - offset));
        if (options_.fail_at_offset && *options_.fail_at_offset >= offset && *options_.fail_at_offset < offset + n) {
            return fail(errc::io_error,
                        "fake://: injected failure at offset " + std::to_string(*options_.fail_at_offset));
        }
        if (options_.short_reads && n > 1) {
            n = std::uniform_int_distribution<std::size_t>(1, n)(random_);
        }
        for (std::size_t i = 0; i < n; ++i) {
            dst[i] = pattern_byte(offset + i);
        }
        return n;
    }

    FakeSourceOptions options_;
    std::mt19937 random_;
    std::string name_;
};

} // namespace ringload::testing
