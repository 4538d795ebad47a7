// engine/include/ringload/engine/byte_reader.hpp
//
// Bounds-checked little-endian reads over a byte span, for format parsers. Running past the
// end is an error value (the caller says what it was reading), never a read out of bounds.
//
//     ByteReader in(header_bytes);
//     RL_TRY(name_length, in.u16());
//     RL_TRY(name, in.bytes(name_length));
#pragma once

#include "ringload/error.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace ringload {

class ByteReader {
public:
    explicit ByteReader(std::span<const std::byte> bytes) : bytes_(bytes) {}

    std::size_t position() const noexcept { return position_; }
    std::size_t remaining() const noexcept { return bytes_.size() - position_; }

    Result<std::uint8_t> u8() { return little_endian<std::uint8_t>(); }
    Result<std::uint16_t> u16() { return little_endian<std::uint16_t>(); }
    Result<std::uint32_t> u32() { return little_endian<std::uint32_t>(); }
    Result<std::uint64_t> u64() { return little_endian<std::uint64_t>(); }

    Result<std::span<const std::byte>> bytes(std::size_t count) {
        if (count > remaining()) {
            return overrun(count);
        }
        auto out = bytes_.subspan(position_, count);
        position_ += count;
        return out;
    }

    Result<std::string_view> text(std::size_t count) {
        RL_TRY(raw, bytes(count));
        return std::string_view(reinterpret_cast<const char*>(raw.data()), raw.size());
    }

private:
    template <class T>
    Result<T> little_endian() {
        if (sizeof(T) > remaining()) {
            return overrun(sizeof(T));
        }
        T value = 0;
        // Formats here are little-endian and so is every host we build for (x86-64, aarch64).
        std::memcpy(&value, bytes_.data() + position_, sizeof(T));
        position_ += sizeof(T);
        return value;
    }

    Error overrun(std::size_t wanted) const {
        return fail(errc::format_error, "needs " + std::to_string(wanted) + " bytes at offset " +
                                            std::to_string(position_) + " but only " + std::to_string(remaining()) +
                                            " remain");
    }

    std::span<const std::byte> bytes_;
    std::size_t position_ = 0;
};

static_assert(std::endian::native == std::endian::little, "ringload reads little-endian formats natively");

} // namespace ringload
