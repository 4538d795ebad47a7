// tests/consumer/consumer.cpp: loads a file through the installed API and prints
// "<tensor count> <bytes> <first tensor name>".
#include <ringload/ringload.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: consumer FILE\n");
        return 2;
    }
    auto opened = ringload::Deserializer::open(argv[1]);
    if (!opened) {
        std::fprintf(stderr, "%s\n", opened.error().message().c_str());
        return 1;
    }
    ringload::LoadOptions options;
    options.verify_hashes = true;
    auto loaded = opened->load(options);
    if (!loaded) {
        std::fprintf(stderr, "%s\n", loaded.error().message().c_str());
        return 1;
    }
    std::printf("%zu %llu %s\n", loaded->tensors.size(), static_cast<unsigned long long>(loaded->bytes),
                loaded->tensors.front().info.name.c_str());
    return 0;
}
