// formats/torch/little_endian.hpp
//
// Bounds-unchecked little-endian loads for the zip reader and the pickle machine: callers have
// checked that `offset + N <= bytes.size()` before calling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace ringload::torch_zip {

inline std::uint64_t load_le(std::span<const std::byte> bytes, std::size_t offset, std::size_t width) noexcept {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < width; ++i) {
        value |= static_cast<std::uint64_t>(bytes[offset + i]) << (8 * i);
    }
    return value;
}

inline std::uint16_t load_le16(std::span<const std::byte> bytes, std::size_t offset) noexcept {
    return static_cast<std::uint16_t>(load_le(bytes, offset, 2));
}

inline std::uint32_t load_le32(std::span<const std::byte> bytes, std::size_t offset) noexcept {
    return static_cast<std::uint32_t>(load_le(bytes, offset, 4));
}

inline std::uint64_t load_le64(std::span<const std::byte> bytes, std::size_t offset) noexcept {
    return load_le(bytes, offset, 8);
}

} // namespace ringload::torch_zip
