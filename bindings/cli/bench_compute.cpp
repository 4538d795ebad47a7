// bindings/cli/bench_compute.cpp
#include "bench_compute.hpp"

#include "ringload/engine/hashes.hpp"
#include "ringload/engine/secretbox.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

namespace ringload::cli {
namespace {

// 2 MiB: a tensorizer cipher chunk, and a slice of a ring slot; 32 MiB copies leave the caches.
constexpr std::size_t chunk_bytes = 2 << 20;
constexpr std::size_t copy_bytes = 32 << 20;

// One thread's rate: repeats the work until `seconds` have passed.
double one_thread_gb_per_s(CpuWork work, double seconds) {
    const std::size_t size = work == CpuWork::memcpy ? copy_bytes : chunk_bytes;
    std::vector<std::byte> source(size, std::byte{0x5a});
    std::vector<std::byte> target(size, std::byte{0});
    const SecretKey key = SecretKey::random();
    const Nonce nonce{};
    Crc32 crc;
    std::uint8_t sink = 0; // keeps the results live
    std::uint64_t bytes = 0;
    const auto started = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
        switch (work) {
            case CpuWork::memcpy:
                std::memcpy(target.data(), source.data(), size);
                sink ^= static_cast<std::uint8_t>(target[bytes % size]);
                break;
            case CpuWork::crc32:
                crc.update(source);
                break;
            case CpuWork::sha256:
                sink ^= sha256(source)[0];
                break;
            case CpuWork::xsalsa20_poly1305:
                // Sealing and opening cost the same (one XSalsa20 pass and one Poly1305 pass);
                // sealing keeps the measurement free of MAC-failure paths.
                sink ^= seal_in_place(source, nonce, key)[0];
                break;
        }
        bytes += size;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    }
    static std::atomic<std::uint32_t> keep{0};
    keep.fetch_add(sink + crc.value(), std::memory_order_relaxed);
    return static_cast<double>(bytes) / elapsed / 1e9;
}

} // namespace

std::string_view cpu_work_name(CpuWork work) {
    switch (work) {
        case CpuWork::memcpy:
            return "memcpy";
        case CpuWork::crc32:
            return "crc32";
        case CpuWork::sha256:
            return "sha256";
        case CpuWork::xsalsa20_poly1305:
            return "xsalsa20-poly1305";
    }
    return "?";
}

double cpu_gb_per_s(CpuWork work, std::size_t threads, double seconds) {
    std::vector<double> rates(threads);
    std::vector<std::thread> workers;
    for (std::size_t i = 0; i < threads; ++i) {
        workers.emplace_back([&rates, i, work, seconds] { rates[i] = one_thread_gb_per_s(work, seconds); });
    }
    double total = 0;
    for (std::size_t i = 0; i < threads; ++i) {
        workers[i].join();
        total += rates[i];
    }
    return total;
}

} // namespace ringload::cli
