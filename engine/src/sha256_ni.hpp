// engine/src/sha256_ni.hpp
//
// SHA-256's compression function on x86's SHA extensions (SHA-NI), for up to four independent
// messages at once. One message is bound by the latency of sha256rnds2 (2 cycles a byte on
// the machines we measured: 2.06 GB/s on a Zen 5 core, as OpenSSL); interleaving the rounds of
// independent messages fills the pipeline the one leaves idle: 2.98 GB/s for two, 3.50 for four
// on that core (the SHA instructions reach only xmm0-15: more lanes spill).
//
//     if (sha_ni_available()) sha256_ni_blocks(states, data, 2, blocks);
//
// `states[l]` is lane l's H0..H7 (FIPS 180-4's order), `data[l]` its `blocks` x 64 bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringload {

inline constexpr std::size_t sha_ni_lanes_max = 4;

// The CPU has SHA-NI, SSSE3 and SSE4.1 (asked once, with cpuid), and RINGLOAD_SHA_NI is not
// "0" (which tests the path of CPUs without it).
bool sha_ni_available() noexcept;

// 1 <= lanes <= sha_ni_lanes_max; only when sha_ni_available().
void sha256_ni_blocks(std::uint32_t* const* states, const std::uint8_t* const* data, std::size_t lanes,
                      std::size_t blocks) noexcept;

} // namespace ringload
