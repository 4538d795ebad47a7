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

#if defined(__x86_64__)
// Copies whole 64-byte destination lines with streaming stores (after a plain head up to the
// first line boundary); returns how many bytes it copied. The caller fences and copies the tail.
std::size_t stream_whole_lines(std::byte* destination, const std::byte* source, std::size_t length) noexcept {
    const std::size_t head = (64 - reinterpret_cast<std::uintptr_t>(destination) % 64) % 64;
    std::memcpy(destination, source, head);
    auto* to = reinterpret_cast<__m128i*>(destination + head);
    const auto* from = reinterpret_cast<const __m128i*>(source + head);
    const std::size_t lines = (length - head) / 64;
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
    return head + lines * 64;
}
#endif

} // namespace

void copy_to_destination(std::byte* destination, const std::byte* source, std::size_t length) noexcept {
#if defined(__x86_64__)
    if (length >= streaming_threshold_bytes) {
        const std::size_t done = stream_whole_lines(destination, source, length);
        // Streaming stores are weakly ordered: fence before anyone (a hash, the caller) reads.
        _mm_sfence();
        std::memcpy(destination + done, source + done, length - done);
        return;
    }
#endif
    std::memcpy(destination, source, length);
}

void copy_to_destination_unfenced(std::byte* destination, const std::byte* source, std::size_t length) noexcept {
#if defined(__x86_64__)
    if (length >= 4096) {
        const std::size_t done = stream_whole_lines(destination, source, length);
        std::memcpy(destination + done, source + done, length - done);
        return;
    }
#endif
    std::memcpy(destination, source, length);
}

void streaming_fence() noexcept {
#if defined(__x86_64__)
    _mm_sfence();
#endif
}

} // namespace ringload
