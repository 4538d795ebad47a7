// tests/tools/write_formats.cpp: safetensors and torch zip files written through ringload's
// public writer API, for the peer test format_writers_test.py.
//
//   ringload-write-formats DIR
//       Writes DIR/model.safetensors (alignment 8, one metadata entry), DIR/aligned.safetensors
//       (alignment 64, several metadata entries, order kept), DIR/wide.safetensors (U16, U32,
//       U64, F8_E4M3, F8_E5M2: dtypes torch 1.13 lacks) and DIR/model.pt (torch.save zip with
//       nested dicts and lists, meta tensors, 1,001-entry containers and a 1,000-entry dict) and
//       DIR/newer.pt (float8, uint16-64, complex32 and a bf16 meta tensor: torch >= 2.1), and prints a JSON
//       manifest: per file its options and per tensor its path, dtype, shape and seed.
//
// Tensor bytes follow one documented pattern, so that the peer test derives what it expects on
// its own: byte i of the tensor with seed s is (i * 131 + s * 17 + 5) % 251, and for bool
// tensors that value & 1.
#include "../support/path_json.hpp"
#include "ringload/serializer.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <string>
#include <vector>

namespace {

using ringload::DType;
using ringload::PathComponent;
using ringload::TensorToWrite;
using ringload::testing::path_json;

struct Case {
    std::vector<PathComponent> path;
    DType dtype;
    std::vector<std::uint64_t> shape;
    std::vector<std::byte> bytes;
    unsigned seed = 0;
    bool is_meta = false; // torch only: no bytes
};

void fill(Case& c) {
    std::uint64_t count = 1;
    for (auto dim : c.shape) {
        count *= dim;
    }
    c.bytes.resize(count * ringload::itemsize(c.dtype));
    for (std::size_t i = 0; i < c.bytes.size(); ++i) {
        unsigned value = (i * 131 + c.seed * 17 + 5) % 251;
        c.bytes[i] = static_cast<std::byte>(c.dtype == DType::boolean ? (value & 1) : value);
    }
}

std::vector<Case> with_seeds(std::vector<Case> cases, unsigned first_seed) {
    for (auto& c : cases) {
        c.seed = first_seed++;
        fill(c);
    }
    return cases;
}

// Tensors of every dtype torch 1.13 and safetensors share, in every kind of shape.
std::vector<Case> common_cases() {
    return with_seeds(
        {
            {{"f64"}, DType::float64, {3, 5}},
            {{"f32"}, DType::float32, {4, 4}},
            {{"f16"}, DType::float16, {7}},
            {{"bf16"}, DType::bfloat16, {2, 3, 4, 5}},
            {{"i64"}, DType::int64, {6}},
            {{"i32"}, DType::int32, {2, 2}},
            {{"i16"}, DType::int16, {5}},
            {{"i8"}, DType::int8, {9}},
            {{"u8"}, DType::uint8, {3, 1, 2}},
            {{"flag"}, DType::boolean, {11}},
            {{"scalar"}, DType::float32, {}},
            {{"scalar_i64"}, DType::int64, {}},
            {{"empty"}, DType::float32, {0, 3}},
            {{"empty_bf16"}, DType::bfloat16, {3, 0}},
            {{"big"}, DType::float16, {1536, 1025}}, // 3 MB: over several 1 MiB windows
        },
        1);
}

nlohmann::json rows_of(const std::vector<Case>& cases) {
    auto rows = nlohmann::json::array();
    for (const auto& c : cases) {
        rows.push_back({{"path", path_json(c.path)},
                        {"dtype", std::string(ringload::torch_name(c.dtype))},
                        {"shape", c.shape},
                        {"seed", c.seed},
                        {"meta", c.is_meta}});
    }
    return rows;
}

// [[key, value], ...]: a JSON object would not keep the order.
nlohmann::json metadata_json(const std::vector<std::pair<std::string, std::string>>& metadata) {
    auto out = nlohmann::json::array();
    for (const auto& [key, value] : metadata) {
        out.push_back({key, value});
    }
    return out;
}

std::vector<TensorToWrite> to_write(const std::vector<Case>& cases) {
    std::vector<TensorToWrite> tensors;
    for (const auto& c : cases) {
        TensorToWrite tensor;
        tensor.path = c.path;
        tensor.dtype = c.dtype;
        tensor.shape = c.shape;
        tensor.bytes = c.bytes;
        tensor.is_meta = c.is_meta;
        tensors.push_back(std::move(tensor));
    }
    return tensors;
}

bool report(const ringload::Result<ringload::WriteSummary>& written, const std::string& file) {
    if (!written) {
        std::cerr << file << ": " << written.error().message() << "\n";
        return false;
    }
    return true;
}

int write_formats(const std::string& dir) {
    nlohmann::json manifest;
    ringload::SafetensorsWriteOptions small_slots;
    small_slots.slot_size_bytes = 1 << 20;
    small_slots.slot_count = 4;

    // safetensors, as the reference writes it.
    auto common = common_cases();
    common.push_back({{"model", "layers", std::uint64_t{0}, "weight"}, DType::float32, {2, 3}});
    common.back().seed = 90;
    fill(common.back());
    auto options = small_slots;
    options.metadata = {{"format", "pt"}};
    if (!report(ringload::write_safetensors(dir + "/model.safetensors", to_write(common), options),
                "model.safetensors")) {
        return 1;
    }
    manifest["model.safetensors"] = {
        {"alignment", 8}, {"metadata", metadata_json(options.metadata)}, {"tensors", rows_of(common)}};

    options.alignment_bytes = 64;
    options.keep_order = true;
    options.metadata = {{"zeta", "last"}, {"alpha", "first"}, {"unicode", "\xc3\xa9t\xc3\xa9"}};
    if (!report(ringload::write_safetensors(dir + "/aligned.safetensors", to_write(common), options),
                "aligned.safetensors")) {
        return 1;
    }
    manifest["aligned.safetensors"] = {
        {"alignment", 64}, {"metadata", metadata_json(options.metadata)}, {"tensors", rows_of(common)}};

    auto wide = with_seeds({{{"u16"}, DType::uint16, {5}},
                            {{"u32"}, DType::uint32, {2, 3}},
                            {{"u64"}, DType::uint64, {4}},
                            {{"e4m3"}, DType::float8_e4m3fn, {3, 3}},
                            {{"e5m2"}, DType::float8_e5m2, {6}},
                            {{"f32"}, DType::float32, {1}}},
                           200);
    if (!report(ringload::write_safetensors(dir + "/wide.safetensors", to_write(wide), small_slots),
                "wide.safetensors")) {
        return 1;
    }
    manifest["wide.safetensors"] = {
        {"alignment", 8}, {"metadata", nlohmann::json::array()}, {"tensors", rows_of(wide)}};

    // torch: the common tensors, complex ones, nested dicts and lists, and containers of 1,001
    // entries (several SETITEMS / APPENDS batches, memo indexes past 255, storage keys past 9).
    auto torch_cases = common_cases();
    auto extra = with_seeds({{{"c64"}, DType::complex64, {3}},
                             {{"c128"}, DType::complex128, {2, 2}},
                             {{"model", "layers", std::uint64_t{0}, "weight"}, DType::float32, {2, 3}},
                             {{"model", "layers", std::uint64_t{1}, "weight"}, DType::bfloat16, {4}},
                             {{"model", "norm"}, DType::float16, {8}},
                             {{"model", "layers", std::uint64_t{1}, "bias"}, DType::int8, {4}}},
                            100);
    torch_cases.insert(torch_cases.end(), extra.begin(), extra.end());
    // Meta tensors of dtypes torch 1.13's weights-only loader allowlists for them.
    torch_cases.push_back({{"ghost"}, DType::float32, {2, 3}, {}, 0, true});
    torch_cases.push_back({{"model", "ghost_0d"}, DType::int64, {}, {}, 0, true});
    for (std::uint64_t i = 0; i < 1001; ++i) {
        torch_cases.push_back({{"bank", i}, DType::int16, {2}, {}, static_cast<unsigned>(1000 + i)});
        fill(torch_cases.back());
        torch_cases.push_back(
            {{"table", "k" + std::to_string(i)}, DType::uint8, {1}, {}, static_cast<unsigned>(3000 + i)});
        fill(torch_cases.back());
    }
    // A dict of exactly 1,000: CPython's pickler ends it with an empty MARK ... SETITEMS.
    for (std::uint64_t i = 0; i < 1000; ++i) {
        torch_cases.push_back(
            {{"grid", "g" + std::to_string(i)}, DType::int8, {1}, {}, static_cast<unsigned>(5000 + i)});
        fill(torch_cases.back());
    }
    ringload::WriteOptions torch_options;
    torch_options.slot_size_bytes = 1 << 20;
    torch_options.slot_count = 4;
    if (!report(ringload::write_torch(dir + "/model.pt", to_write(torch_cases), torch_options), "model.pt")) {
        return 1;
    }
    manifest["model.pt"] = {{"tensors", rows_of(torch_cases)}};
    // dtypes without a legacy storage class: _rebuild_tensor_v3 + UntypedStorage (torch >= 2.1),
    // and a meta tensor of a dtype torch 1.13 does not allowlist for meta tensors.
    auto newer = with_seeds({{{"e4m3"}, DType::float8_e4m3fn, {2, 3}},
                             {{"e5m2"}, DType::float8_e5m2, {5}},
                             {{"u16"}, DType::uint16, {4}},
                             {{"u32"}, DType::uint32, {}},
                             {{"u64"}, DType::uint64, {3, 1}},
                             {{"chalf"}, DType::complex32, {2}},
                             {{"f32"}, DType::float32, {3}}},
                            400);
    newer.push_back({{"ghost_bf16"}, DType::bfloat16, {2}, {}, 0, true});
    if (!report(ringload::write_torch(dir + "/newer.pt", to_write(newer), torch_options), "newer.pt")) {
        return 1;
    }
    manifest["newer.pt"] = {{"tensors", rows_of(newer)}};
    std::cout << manifest.dump(1) << "\n";
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::cerr << "usage: ringload-write-formats DIR\n";
        return 2;
    }
    return write_formats(argv[1]);
}
