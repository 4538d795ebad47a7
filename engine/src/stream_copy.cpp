// engine/src/stream_copy.cpp
#include "ringload/engine/stream_copy.hpp"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace ringload {
namespace {

// Below this the copy is mostly cache-resident anyway, and the fence would cost more than it saves.
constexpr std::size_t streaming_threshold_bytes = 256 << 10;

} // namespace

void copy_to_destination(std::byte* destination, const std::byte* source, std::size_t length) noexcept {
#if defined(__x86_64__)
    if (length >= streaming_threshold_bytes) {
        // Head: up to the destination's next 64-byte boundary (whole cache lines below).
        std::size_t head = (64 - reinterpret_cast<std::uintptr_t>(destination) % 64) % 64;
        std::memcpy(destination, source, head);
        destination += head;
        source += head;
        length -= head;
        auto* to = reinterpret_cast<__m128i*>(destination);
        const auto* from = reinterpret_cast<const __m128i*>(source);
        const std::size_t lines = length / 64;
        for (std::size_t line = 0; line < lines; ++line, to += 4, from += 4) {
            __m128i a = _mm_loadu_si128(from);
            __m128i b = _mm_loadu_si128(from + 1);
            __m128i c = _mm_loadu_si128(from + 2);
            __m128i d = _mm_loadu_si128(from + 3);
            _mm_stream_si128(to, a);
            _mm_stream_si128(to + 1, b);
            _mm_stream_si128(to + 2, c);
            _mm_stream_si128(to + 3, d);
        }
        // Streaming stores are weakly ordered: fence before anyone (a hash, the caller) reads.
        _mm_sfence();
        std::memcpy(to, from, length % 64);
        return;
    }
#endif
    std::memcpy(destination, source, length);
}

} // namespace ringload
