// ringload-gpu-bench: a load to the GPU against the machine's pinned host-to-device copy rate,
// both measured by this one program, plus what the load costs in host memory.
//
//   ringload-gpu-bench FILE [--device cuda:N] [--ring-mib 256] [--slot-mib 4] [--verify]
//
// Prints one JSON object: the GPU's name, the pinned cudaMemcpyAsync rate (the best of a few
// 256 MiB copies), the load's GB/s and its ratio to that rate, and the load's peak RSS above
// what the process held before it (VmHWM after minus VmRSS before, with the peak reset via
// /proc/self/clear_refs where the kernel allows) against the ring's size plus 64 MiB.
// bench/gpu_load.sh runs it on hot and cold caches and puts the numbers side by side.
#include "ringload/ringload.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>

namespace {

// A line of /proc/self/status in kB ("VmRSS:", "VmHWM:"), as bytes.
long long status_bytes(std::string_view field) {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.starts_with(field)) {
            return std::atoll(line.c_str() + field.size()) * 1024;
        }
    }
    return -1;
}

bool reset_peak_rss() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
    clear.flush();
    return static_cast<bool>(clear);
}

#define CUDA_OR_DIE(call)                                                                             \
    do {                                                                                              \
        cudaError_t status_ = (call);                                                                 \
        if (status_ != cudaSuccess) {                                                                 \
            std::fprintf(stderr, "ringload-gpu-bench: %s: %s\n", #call, cudaGetErrorString(status_)); \
            std::exit(1);                                                                             \
        }                                                                                             \
    } while (false)

// The best of a few pinned host-to-device copies of `bytes`, in GB/s.
double pinned_h2d_gbps(int ordinal, std::size_t bytes) {
    CUDA_OR_DIE(cudaSetDevice(ordinal));
    void* host = nullptr;
    void* device = nullptr;
    CUDA_OR_DIE(cudaHostAlloc(&host, bytes, cudaHostAllocDefault));
    CUDA_OR_DIE(cudaMalloc(&device, bytes));
    std::memset(host, 1, bytes);
    cudaStream_t stream = nullptr;
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
    CUDA_OR_DIE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    CUDA_OR_DIE(cudaEventCreate(&start));
    CUDA_OR_DIE(cudaEventCreate(&stop));
    double best = 0;
    for (int round = 0; round < 6; ++round) {
        CUDA_OR_DIE(cudaEventRecord(start, stream));
        CUDA_OR_DIE(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream));
        CUDA_OR_DIE(cudaEventRecord(stop, stream));
        CUDA_OR_DIE(cudaEventSynchronize(stop));
        float ms = 0;
        CUDA_OR_DIE(cudaEventElapsedTime(&ms, start, stop));
        if (round > 0) { // the first one warms the path up
            best = std::max(best, static_cast<double>(bytes) / (ms / 1e3) / 1e9);
        }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    cudaStreamDestroy(stream);
    cudaFree(device);
    cudaFreeHost(host);
    return best;
}

} // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s FILE [--device cuda:N] [--ring-mib 256] [--slot-mib 4] [--verify]\n", argv[0]);
        return 2;
    }
    std::string file = argv[1];
    std::string device = "cuda:0";
    std::size_t ring_mib = 256;
    std::size_t slot_mib = 4;
    bool verify = false;
    for (int i = 2; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--device" && i + 1 < argc) {
            device = argv[++i];
        } else if (arg == "--ring-mib" && i + 1 < argc) {
            ring_mib = std::strtoull(argv[++i], nullptr, 10);
        } else if (arg == "--slot-mib" && i + 1 < argc) {
            slot_mib = std::strtoull(argv[++i], nullptr, 10);
        } else if (arg == "--verify") {
            verify = true;
        } else {
            std::fprintf(stderr, "ringload-gpu-bench: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    const int ordinal = device == "cuda" ? 0 : std::atoi(device.c_str() + 5);
    cudaDeviceProp properties{};
    CUDA_OR_DIE(cudaGetDeviceProperties(&properties, ordinal));
    const double h2d = pinned_h2d_gbps(ordinal, 256 << 20);

    const long long rss_before = status_bytes("VmRSS:");
    const bool peak_reset = reset_peak_rss();
    auto opened = ringload::Deserializer::open(file);
    if (!opened) {
        std::fprintf(stderr, "ringload-gpu-bench: %s\n", opened.error().message().c_str());
        return 1;
    }
    ringload::LoadOptions options;
    options.device = device;
    options.slot_size_bytes = slot_mib << 20;
    options.slot_count = static_cast<std::uint32_t>(ring_mib / slot_mib);
    options.verify_hashes = verify;
    auto loaded = opened->load(options);
    if (!loaded) {
        std::fprintf(stderr, "ringload-gpu-bench: %s\n", loaded.error().message().c_str());
        return 1;
    }
    const long long peak = status_bytes("VmHWM:");
    const double load_gbps = static_cast<double>(loaded->bytes) / loaded->seconds / 1e9;
    const long long raised = peak - rss_before;
    const long long allowed = static_cast<long long>(ring_mib + 64) << 20;
    std::printf(
        "{\"gpu\": \"%s\", \"file\": \"%s\", \"bytes\": %llu, \"how\": \"%s\", \"verify\": %s, "
        "\"pinned_h2d_gb_per_s\": %.3f, \"load_gb_per_s\": %.3f, \"load_over_h2d\": %.3f, "
        "\"ring_mib\": %zu, \"rss_before_mib\": %.1f, \"peak_rss_mib\": %.1f, \"peak_raise_mib\": %.1f, "
        "\"peak_raise_allowed_mib\": %.1f, \"peak_reset\": %s, \"rss_ok\": %s}\n",
        properties.name, file.c_str(), static_cast<unsigned long long>(loaded->bytes), loaded->how.c_str(),
        verify ? "true" : "false", h2d, load_gbps, load_gbps / h2d, ring_mib, rss_before / 1048576.0, peak / 1048576.0,
        raised / 1048576.0, allowed / 1048576.0, peak_reset ? "true" : "false", raised <= allowed ? "true" : "false");
    return 0;
}
