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
#include "../bindings/cli/warm_memory.hpp"
#include "ringload/ringload.hpp"
#include "ringload/serializer.hpp"

#include <sys/resource.h>

#include <cstdio>
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
    (void)ringload::bench::warm_fresh_memory(options.slot_count * options.slot_size_bytes + (64 << 20));
    const double cpu_before = cpu_seconds();
    auto written = ringload::write_tensorizer(argv[2], tensors, options);
    const double cpu = cpu_seconds() - cpu_before;
    if (!written) {
        return fail(written.error().message());
    }
    std::printf(
        "{\"gb_per_s\": %.4f, \"seconds\": %.4f, \"cpu_seconds\": %.4f, \"file_bytes\": %llu, "
        "\"how\": \"%s\"}\n",
        static_cast<double>(written->file_bytes) / written->seconds / 1e9, written->seconds, cpu,
        static_cast<unsigned long long>(written->file_bytes), written->how.c_str());
    return 0;
}
