// ringload-secretbox-rate: one core's XSalsa20-Poly1305 throughput, as tensorizer chunks it
// (libsodium crypto_secretbox, 2 MiB chunks, detached MACs, in place). The encrypted-load
// benchmark compares a load with cores x this rate.
//
//   ringload-secretbox-rate [MIB]   prints {"open_gb_per_s": ..., "seal_gb_per_s": ...}
#include "ringload/engine/secretbox.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    using Clock = std::chrono::steady_clock;
    const std::size_t chunk = 2 << 20;
    const std::size_t total = (argc > 1 ? std::stoul(argv[1]) : 256) << 20;
    std::vector<std::byte> data(total, std::byte{0x5a});
    std::vector<ringload::Mac> macs(total / chunk);
    const auto key = ringload::SecretKey::random();
    const auto nonce = ringload::random_nonce();
    double best_open = 0;
    double best_seal = 0;
    for (int round = 0; round < 3; ++round) {
        auto started = Clock::now();
        for (std::size_t i = 0; i < macs.size(); ++i) {
            macs[i] =
                ringload::seal_in_place(std::span(data).subspan(i * chunk, chunk), ringload::nonce_plus(nonce, i), key);
        }
        double seal = std::chrono::duration<double>(Clock::now() - started).count();
        started = Clock::now();
        for (std::size_t i = 0; i < macs.size(); ++i) {
            if (!ringload::open_in_place(std::span(data).subspan(i * chunk, chunk), macs[i],
                                         ringload::nonce_plus(nonce, i), key)) {
                std::fprintf(stderr, "ringload-secretbox-rate: a chunk failed to open\n");
                return 1;
            }
        }
        double open = std::chrono::duration<double>(Clock::now() - started).count();
        best_seal = std::max(best_seal, static_cast<double>(total) / seal / 1e9);
        best_open = std::max(best_open, static_cast<double>(total) / open / 1e9);
    }
    std::printf("{\"open_gb_per_s\": %.3f, \"seal_gb_per_s\": %.3f}\n", best_open, best_seal);
    return 0;
}
