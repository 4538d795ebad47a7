// bindings/cli/bench_compute.hpp
//
// What the CPU can do to the bytes of a load, in GB/s (1e9): copy them (memcpy, the host
// arena's work), CRC32 them (ISA-L), SHA-256 them (OpenSSL) and open XSalsa20-Poly1305 chunks
// (libsodium): the engine's own implementations (engine/hashes.hpp, engine/secretbox.hpp), on
// one core and on `threads` cores at once (each thread its own buffers, as the worker pool).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ringload::cli {

enum class CpuWork : std::uint8_t { memcpy, crc32, sha256, xsalsa20_poly1305 };
// Every kind, in the order `bench limits` lists them.
inline constexpr std::array<CpuWork, 4> all_cpu_work{CpuWork::memcpy, CpuWork::crc32, CpuWork::sha256,
                                                     CpuWork::xsalsa20_poly1305};

std::string_view cpu_work_name(CpuWork work);

// Runs `work` for at least `seconds` on each of `threads` threads; the sum of their rates.
double cpu_gb_per_s(CpuWork work, std::size_t threads, double seconds = 0.25);

} // namespace ringload::cli
