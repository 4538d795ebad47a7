// tests/subproject/main.cpp: a program of another project that builds ringload within its
// own build (add_subdirectory / FetchContent) and loads a file with it: prints
// "<tensor count> <bytes>".
#include <ringload/ringload.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: uses_ringload FILE\n");
        return 2;
    }
    auto opened = ringload::Deserializer::open(argv[1]);
    if (!opened) {
        std::fprintf(stderr, "%s\n", opened.error().message().c_str());
        return 1;
    }
    auto loaded = opened->load({});
    if (!loaded) {
        std::fprintf(stderr, "%s\n", loaded.error().message().c_str());
        return 1;
    }
    std::printf("%zu %llu\n", loaded->tensors.size(), static_cast<unsigned long long>(loaded->bytes));
    return 0;
}
