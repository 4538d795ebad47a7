// tests/tools/write_cases.cpp: files written through ringload's public writer API, for the
// peer tests (tensorizer_interop_test.py, cli_test.py).
//
//   ringload-write-cases cases DIR KEY_FILE PASSPHRASE_FILE
//       Writes plain.tensors, key.tensors and passphrase.tensors (the same tensors: fp32, fp16,
//       bf16, int64, a 0-d scalar, a zero-element tensor, meta tensors (fp32, bf16, 0-d),
//       nested names, a flat key starting with U+001E, a tensor over several cipher chunks) and
//       prints a JSON manifest of what a reader must get: per tensor its path, dtype, shape and
//       the sha256 of the bytes it was written from (zeros for meta tensors); and many.tensors,
//       4,000 tensors, more than tensorizer's fixed 256 KiB index holds.
//   ringload-write-cases slow OUT MIB
//       Writes one MIB-MiB tensor; the first progress report prints "writing" and stalls the
//       write for 5 s, so that a test can kill the process mid-write.
#include "ringload/ringload.hpp"

#include "../support/path_json.hpp"
#include "ringload/serializer.hpp"

#include <openssl/evp.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using ringload::DType;
using ringload::PathComponent;
using ringload::TensorToWrite;
using ringload::testing::path_json;

std::string sha256_hex(std::span<const std::byte> bytes) {
    unsigned char digest[32];
    unsigned int length = 0;
    EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
    std::string hex;
    char pair[3];
    for (unsigned int i = 0; i < length; ++i) {
        std::snprintf(pair, sizeof pair, "%02x", digest[i]);
        hex += pair;
    }
    return hex;
}

struct Case {
    std::vector<PathComponent> path;
    DType dtype;
    std::vector<std::uint64_t> shape;
    bool is_meta = false;
    std::vector<std::byte> bytes;
};

std::vector<Case> make_cases() {
    std::vector<Case> cases = {
        {{"transformer.wte.weight"}, DType::float16, {50, 16}},
        {{"model", "layers", std::uint64_t{0}, "weight"}, DType::float32, {3, 4}},
        {{"model", "layers", std::uint64_t{1}, "weight"}, DType::bfloat16, {64, 33}},
        {{"model", "steps"}, DType::int64, {7}},
        {{"scalar"}, DType::float64, {}},
        {{"empty"}, DType::float32, {0, 3}},
        {{"ghost"}, DType::float32, {5, 4}, true},
        {{"ghost_bf16"}, DType::bfloat16, {2, 3}, true},
        {{"ghost_0d"}, DType::float64, {}, true},
        {{std::string("\x1e") + "record.separated"}, DType::int32, {2}},
        {{"big"}, DType::float32, {3, 700001}}, // 8.4 MB: four full cipher chunks and a short one
    };
    std::mt19937_64 random(42);
    for (auto& c : cases) {
        std::uint64_t count = 1;
        for (auto dim : c.shape) {
            count *= dim;
        }
        c.bytes.resize(count * ringload::itemsize(c.dtype));
        if (!c.is_meta) {
            for (auto& byte : c.bytes) {
                byte = static_cast<std::byte>(random());
            }
        }
    }
    return cases;
}

int write_cases(const std::string& dir, const std::string& key_file, const std::string& passphrase_file) {
    const auto cases = make_cases();
    std::vector<TensorToWrite> tensors;
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& c : cases) {
        tensors.push_back({c.path, c.dtype, c.shape, c.bytes, c.is_meta, 0, 2});
        rows.push_back({{"path", path_json(c.path)},
                        {"dtype", std::string(ringload::torch_name(c.dtype))},
                        {"shape", c.shape},
                        {"sha256", sha256_hex(c.bytes)}});
    }
    auto from_key = ringload::EncryptionParams::from_key_file(key_file);
    // A cheap Argon2id cost keeps the test fast; readers take the cost from the file.
    auto from_passphrase = ringload::EncryptionParams::from_passphrase_file(passphrase_file, {2, 64 << 20});
    if (!from_key || !from_passphrase) {
        std::cerr << (from_key ? from_passphrase.error() : from_key.error()).message() << "\n";
        return 1;
    }
    nlohmann::json manifest;
    for (auto [file, encryption] : {std::pair{"plain.tensors", std::optional<ringload::EncryptionParams>()},
                                    std::pair{"key.tensors", std::optional(*from_key)},
                                    std::pair{"passphrase.tensors", std::optional(*from_passphrase)}}) {
        ringload::WriteOptions options;
        options.encryption = encryption;
        auto written = ringload::write_tensorizer(dir + "/" + file, tensors, options);
        if (!written) {
            std::cerr << written.error().message() << "\n";
            return 1;
        }
        manifest["files"].push_back({{"file", file}, {"data_version", written->data_version}, {"tensors", rows}});
    }
    // More tensors than tensorizer's fixed 256 KiB index holds (~3,300): the index grows.
    const std::size_t many = 4000;
    std::vector<std::vector<std::byte>> values(many);
    std::vector<TensorToWrite> many_tensors;
    nlohmann::json many_rows = nlohmann::json::array();
    for (std::size_t i = 0; i < many; ++i) {
        values[i].resize(4);
        std::memcpy(values[i].data(), &i, 4);
        std::string name = "model.layers." + std::to_string(i) + ".layer_norm.scale";
        many_tensors.push_back({{name}, DType::int32, {1}, values[i]});
        many_rows.push_back({{"path", {name}}, {"dtype", "int32"}, {"shape", {1}}, {"sha256", sha256_hex(values[i])}});
    }
    auto written = ringload::write_tensorizer(dir + "/many.tensors", many_tensors);
    if (!written) {
        std::cerr << written.error().message() << "\n";
        return 1;
    }
    manifest["files"].push_back(
        {{"file", "many.tensors"}, {"data_version", written->data_version}, {"tensors", many_rows}});
    std::cout << manifest.dump() << "\n";
    return 0;
}

int write_slowly(const std::string& out, std::uint64_t mebibytes) {
    std::vector<std::byte> bytes(mebibytes << 20, std::byte{7});
    std::vector<TensorToWrite> tensors = {{{"slow"}, DType::uint8, {bytes.size()}, bytes}};
    ringload::WriteOptions options;
    bool said = false;
    options.progress = [&said](const ringload::Progress&) {
        if (!said) {
            said = true;
            std::printf("writing\n");
            std::fflush(stdout);
            std::this_thread::sleep_for(std::chrono::seconds(5));
        }
    };
    auto written = ringload::write_tensorizer(out, tensors, options);
    if (!written) {
        std::cerr << written.error().message() << "\n";
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.size() == 4 && args[0] == "cases") {
        return write_cases(args[1], args[2], args[3]);
    }
    if (args.size() == 3 && args[0] == "slow") {
        return write_slowly(args[1], std::stoull(args[2]));
    }
    std::cerr << "usage: ringload-write-cases cases DIR KEY_FILE PASSPHRASE_FILE | slow OUT MIB\n";
    return 2;
}
