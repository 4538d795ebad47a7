// ringload-write-bench IN OUT [KEY_FILE]: the tensorizer writer's throughput from memory, for
// the writer benchmark (bench/write_vs_disk.sh).
//
// `ringload convert` streams (its reads of IN overlap its writes of OUT on the same disk), so
// it cannot show what the writer alone does. This loads IN into host memory first (untimed),
// then writes every tensor to OUT with write_tensorizer, encrypted with the 32-byte key in
// KEY_FILE when given, and prints {"gb_per_s", "seconds", "file_bytes", "how"}: the seconds
// of the write call, until OUT is durable and in place.
#include "ringload/ringload.hpp"
#include "ringload/serializer.hpp"

#include <cstdio>
#include <string>

namespace {

int fail(const std::string& message) {
    std::fprintf(stderr, "ringload-write-bench: %s\n", message.c_str());
    return 1;
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
    auto written = ringload::write_tensorizer(argv[2], tensors, options);
    if (!written) {
        return fail(written.error().message());
    }
    std::printf("{\"gb_per_s\": %.4f, \"seconds\": %.4f, \"file_bytes\": %llu, \"how\": \"%s\"}\n",
                static_cast<double>(written->file_bytes) / written->seconds / 1e9, written->seconds,
                static_cast<unsigned long long>(written->file_bytes), written->how.c_str());
    return 0;
}
