// ringload-write-bench IN OUT [KEY_FILE]: the tensorizer writer's throughput from memory, for
// the writer benchmark (bench/write_vs_disk.sh).
//
// `ringload convert` streams (its reads of IN overlap its writes of OUT on the same disk), so
// it cannot show what the writer alone does. This loads IN into host memory first (untimed),
// then warms RAM for the writer's ring as the benchmark warms it for the raw writer (this VM
// hands freed RAM back to the host, and the load just gave its ring back; docs/benchmarks.md),
// then writes every tensor to OUT with write_tensorizer, encrypted with the 32-byte key in
// KEY_FILE when given, and prints {"gb_per_s", "seconds", "cpu_seconds", "file_bytes", "how"}:
// the seconds of the write call, until OUT is durable and in place, and the process's CPU time
// (user + system, all threads) meanwhile: how near the cores are to being the limit.
#include "ringload/ringload.hpp"
#include "ringload/serializer.hpp"

#include <sys/mman.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

int fail(const std::string& message) {
    std::fprintf(stderr, "ringload-write-bench: %s\n", message.c_str());
    return 1;
}

double cpu_seconds() {
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Touches `bytes` of fresh memory once and gives it back (as bench/warm_ram.cpp, in process).
void warm_ram(std::size_t bytes) {
    void* memory = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory != MAP_FAILED) {
        (void)::madvise(memory, bytes, MADV_HUGEPAGE);
        std::memset(memory, 1, bytes);
        ::munmap(memory, bytes);
    }
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 3 && argc != 4) {
        std::fprintf(stderr, "usage: ringload-write-bench IN OUT [KEY_FILE]\n");
        return 2;
    }
    ringload::WriteOptions options;
    if (argc == 4) {
        auto encryption = ringload::EncryptionParams::from_key_file(argv[3]);
        if (!encryption) {
            return fail(encryption.error().message());
        }
        options.encryption = std::move(*encryption);
    }
    auto opened = ringload::Deserializer::open(argv[1]);
    if (!opened) {
        return fail(opened.error().message());
    }
    auto model = opened->load();
    if (!model) {
        return fail(model.error().message());
    }
    const auto tensors = ringload::tensors_to_write(*model);
    warm_ram(options.slot_count * options.slot_size_bytes + (64 << 20));
    // When the last window reached the disk: the rest of the call is the tail (hashes still
    // running, header pages, fdatasync, rename).
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    double windows_seconds = 0;
    options.progress = [&](const ringload::Progress& progress) {
        if (progress.bytes_done < progress.bytes_total || windows_seconds == 0) {
            windows_seconds = std::chrono::duration<double>(Clock::now() - started).count();
        }
    };
    const double cpu_before = cpu_seconds();
    auto written = ringload::write_tensorizer(argv[2], tensors, options);
    const double cpu = cpu_seconds() - cpu_before;
    if (!written) {
        return fail(written.error().message());
    }
    std::printf(
        "{\"gb_per_s\": %.4f, \"seconds\": %.4f, \"cpu_seconds\": %.4f, \"file_bytes\": %llu, "
        "\"windows_seconds\": %.4f, \"how\": \"%s\"}\n",
        static_cast<double>(written->file_bytes) / written->seconds / 1e9, written->seconds, cpu,
        static_cast<unsigned long long>(written->file_bytes), windows_seconds, written->how.c_str());
    return 0;
}
