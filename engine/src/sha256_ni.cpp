// engine/src/sha256_ni.cpp
#include "sha256_ni.hpp"

#include <cpuid.h>
#include <immintrin.h>
#include <cstdlib>
#include <string_view>

namespace ringload {
namespace {

alignas(16) constexpr std::uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

#define RINGLOAD_SHA_NI __attribute__((target("sha,sse4.1,ssse3")))

// sha256rnds2 keeps the state as ABEF and CDGH; H0..H7 is A..H.
RINGLOAD_SHA_NI inline void load_state(const std::uint32_t* h, __m128i& abef, __m128i& cdgh) {
    const __m128i dcba = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
    const __m128i hgfe = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));
    const __m128i cdab = _mm_shuffle_epi32(dcba, 0xB1);
    const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1B);
    abef = _mm_alignr_epi8(cdab, efgh, 8);
    cdgh = _mm_blend_epi16(efgh, cdab, 0xF0);
}

RINGLOAD_SHA_NI inline void store_state(std::uint32_t* h, __m128i abef, __m128i cdgh) {
    const __m128i feba = _mm_shuffle_epi32(abef, 0x1B);
    const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h), _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}

// Every lane's 64 rounds, four at a time (rounds 4g..4g+3 of each lane before the next group):
// the lanes' sha256rnds2 chains are independent, so one's latency hides behind the others'.
template <std::size_t Lanes>
RINGLOAD_SHA_NI void compress(std::uint32_t* const* states, const std::uint8_t* const* data, std::size_t blocks) {
    const __m128i big_endian = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i abef[Lanes], cdgh[Lanes], abef_before[Lanes], cdgh_before[Lanes], w[Lanes][4];
    const std::uint8_t* next[Lanes];
    for (std::size_t l = 0; l < Lanes; ++l) {
        load_state(states[l], abef[l], cdgh[l]);
        next[l] = data[l];
    }
    for (std::size_t block = 0; block < blocks; ++block) {
        for (std::size_t l = 0; l < Lanes; ++l) {
            abef_before[l] = abef[l];
            cdgh_before[l] = cdgh[l];
        }
#pragma GCC unroll 16
        for (int g = 0; g < 16; ++g) {
            const __m128i k = _mm_load_si128(reinterpret_cast<const __m128i*>(&round_constants[4 * g]));
#pragma GCC unroll 4
            for (std::size_t l = 0; l < Lanes; ++l) {
                __m128i words;
                if (g < 4) {
                    words = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(next[l] + 16 * g)),
                                             big_endian);
                } else {
                    // W[t..t+3] from W[t-16..t-13], W[t-12..t-9], W[t-7..t-4] and W[t-4..t-1].
                    const __m128i sigma0 = _mm_sha256msg1_epu32(w[l][g & 3], w[l][(g + 1) & 3]);
                    const __m128i minus7 = _mm_alignr_epi8(w[l][(g + 3) & 3], w[l][(g + 2) & 3], 4);
                    words = _mm_sha256msg2_epu32(_mm_add_epi32(sigma0, minus7), w[l][(g + 3) & 3]);
                }
                w[l][g & 3] = words;
                const __m128i plus_k = _mm_add_epi32(words, k);
                cdgh[l] = _mm_sha256rnds2_epu32(cdgh[l], abef[l], plus_k);
                abef[l] = _mm_sha256rnds2_epu32(abef[l], cdgh[l], _mm_shuffle_epi32(plus_k, 0x0E));
            }
        }
        for (std::size_t l = 0; l < Lanes; ++l) {
            abef[l] = _mm_add_epi32(abef[l], abef_before[l]);
            cdgh[l] = _mm_add_epi32(cdgh[l], cdgh_before[l]);
            next[l] += 64;
        }
    }
    for (std::size_t l = 0; l < Lanes; ++l) {
        store_state(states[l], abef[l], cdgh[l]);
    }
}

bool ask_cpu() noexcept {
    if (const char* chosen = std::getenv("RINGLOAD_SHA_NI"); chosen != nullptr && std::string_view(chosen) == "0") {
        return false; // OpenSSL's SHA-256 instead: what a CPU without SHA-NI runs (tests)
    }
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) {
        return false;
    }
    const bool ssse3 = (ecx & bit_SSSE3) != 0;
    const bool sse41 = (ecx & bit_SSE4_1) != 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) {
        return false;
    }
    return ssse3 && sse41 && (ebx & bit_SHA) != 0;
}

} // namespace

bool sha_ni_available() noexcept {
    static const bool available = ask_cpu();
    return available;
}

void sha256_ni_blocks(std::uint32_t* const* states, const std::uint8_t* const* data, std::size_t lanes,
                      std::size_t blocks) noexcept {
    switch (lanes) {
        case 1:
            return compress<1>(states, data, blocks);
        case 2:
            return compress<2>(states, data, blocks);
        case 3:
            return compress<3>(states, data, blocks);
        default:
            return compress<4>(states, data, blocks);
    }
}

} // namespace ringload
