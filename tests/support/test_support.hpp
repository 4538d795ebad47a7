// tests/support/test_support.hpp
//
// Shared by the test executables: where the fixtures are, JSON manifests, temporary
// directories that clean up after themselves, and the loop runner for coroutine tests.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace ringload::testing {

// tests/data as configured, or RINGLOAD_TEST_DATA_DIR from the environment (a build carried
// to another machine, e.g. a GPU one, where the source tree lies elsewhere).
inline std::filesystem::path data_dir() {
    const char* moved = std::getenv("RINGLOAD_TEST_DATA_DIR");
    return moved != nullptr && *moved != '\0' ? std::filesystem::path(moved)
                                              : std::filesystem::path(RINGLOAD_TEST_DATA_DIR);
}
inline std::filesystem::path tensorizer_dir() {
    return data_dir() / "tensorizer";
}

inline nlohmann::json read_json(const std::filesystem::path& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in);
}

// The valid fixtures listed in tests/data/tensorizer/index.json, in its order.
inline std::vector<std::string> tensorizer_fixture_files() {
    std::vector<std::string> files;
    const auto index = read_json(tensorizer_dir() / "index.json");
    for (const auto& entry : index["files"]) {
        files.push_back(entry["file"].get<std::string>());
    }
    return files;
}

inline std::string hex_of(const std::string& bytes) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char c : bytes) {
        out += digits[c >> 4];
        out += digits[c & 15];
    }
    return out;
}

// A fresh directory under $TMPDIR (or a given parent), removed with everything in it.
class TempDir {
public:
    explicit TempDir(const std::filesystem::path& parent = std::filesystem::temp_directory_path()) {
        std::random_device seed;
        path_ = parent / ("ringload-test-" + std::to_string(seed()) + std::to_string(seed()));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

// `text` as the file at `path`, its folders made first; the path, as text.
inline std::string write_text(const std::filesystem::path& path, const std::string& text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path) << text;
    return path.string();
}

inline std::filesystem::path write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return path;
}

// `count` bytes from a generator seeded with `seed`: the same bytes for the same seed.
inline std::vector<std::byte> random_bytes(std::size_t count, unsigned seed) {
    std::mt19937 random(seed);
    std::vector<std::byte> bytes(count);
    for (auto& byte : bytes) {
        byte = static_cast<std::byte>(random());
    }
    return bytes;
}

inline std::vector<std::byte> read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::byte> bytes(chars.size());
    std::memcpy(bytes.data(), chars.data(), chars.size());
    return bytes;
}

// Runs a coroutine to completion on `loop` and returns its result.
template <class T>
T run_to_completion(boost::asio::io_context& loop, Task<T> task) {
    std::optional<T> out;
    boost::asio::co_spawn(loop, std::move(task), [&out](std::exception_ptr error, T value) {
        if (error) {
            std::rethrow_exception(error);
        }
        out.emplace(std::move(value));
    });
    loop.restart();
    loop.run();
    return std::move(*out);
}

} // namespace ringload::testing
