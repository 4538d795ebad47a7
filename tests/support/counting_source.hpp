// tests/support/counting_source.hpp
//
// A whole file in memory as a Source that counts its reads and the bytes they returned: for
// the readers' "at most N reads" promises (tests/formats/torch_reader_test.cpp).
#pragma once

#include "ringload/engine/source.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ringload::testing {

class CountingSource final : public Source {
public:
    CountingSource(std::string name, std::vector<std::byte> bytes) : name_(std::move(name)), bytes_(std::move(bytes)) {}

    const std::string& name() const override { return name_; }
    std::uint64_t size_bytes() const override { return bytes_.size(); }
    std::size_t alignment_bytes() const override { return 1; }
    std::string describe() const override { return "memory"; }

    Task<Result<std::size_t>> read_some_at(std::uint64_t offset, ReadTarget target) override {
        co_return copy(offset, target.bytes());
    }
    Task<Result<std::size_t>> read_small_at(std::uint64_t offset, std::span<std::byte> dst) override {
        co_return copy(offset, dst);
    }

    std::size_t reads = 0;
    std::uint64_t bytes_read = 0;

private:
    std::size_t copy(std::uint64_t offset, std::span<std::byte> dst) {
        ++reads;
        if (offset >= bytes_.size()) {
            return 0;
        }
        const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(dst.size(), bytes_.size() - offset));
        std::memcpy(dst.data(), bytes_.data() + offset, n);
        bytes_read += n;
        return n;
    }

    std::string name_;
    std::vector<std::byte> bytes_;
};

} // namespace ringload::testing
