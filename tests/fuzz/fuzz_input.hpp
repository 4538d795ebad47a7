// tests/fuzz/fuzz_input.hpp
//
// What the fuzz targets share: the input as bytes and text, and a cut of it into pieces (the
// first bytes choose where), so that one input can feed a parser several related buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

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

// `text` cut at each `separator` (memmem, so that libFuzzer learns the separator from the
// comparison).
inline std::vector<std::string_view> split(std::string_view text, std::string_view separator) {
    std::vector<std::string_view> pieces;
    for (;;) {
        const void* found = ::memmem(text.data(), text.size(), separator.data(), separator.size());
        if (found == nullptr) {
            pieces.push_back(text);
            return pieces;
        }
        const auto at = static_cast<std::size_t>(static_cast<const char*>(found) - text.data());
        pieces.push_back(text.substr(0, at));
        text.remove_prefix(at + separator.size());
    }
}

} // namespace ringload::fuzz
