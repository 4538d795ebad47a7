// tests/fuzz/fuzz_input.hpp
//
// What the fuzz targets share: the input as bytes and text, and a cut of it into pieces (the
// first bytes choose where), so that one input can feed a parser several related buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace ringload::fuzz {

struct Input {
    std::span<const std::byte> bytes;

    Input(const std::uint8_t* data, std::size_t size) : bytes(reinterpret_cast<const std::byte*>(data), size) {}

    std::string_view text() const { return {reinterpret_cast<const char*>(bytes.data()), bytes.size()}; }

    // The first byte (if any) as a small number, and the rest.
    std::uint8_t take_byte() {
        if (bytes.empty()) {
            return 0;
        }
        const auto value = static_cast<std::uint8_t>(bytes.front());
        bytes = bytes.subspan(1);
        return value;
    }
};

} // namespace ringload::fuzz
