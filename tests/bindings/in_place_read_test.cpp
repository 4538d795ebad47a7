// tests/bindings/in_place_read_test.cpp
//
// Reads straight into the tensors from a file (bindings/cpp/src/load/load_layout.hpp): a
// safetensors file whose tensors start at awkward offsets (8 past a page boundary, odd, not a
// multiple of their item size) loads the same bytes as the file holds, whether read with
// O_DIRECT or through the page cache; with O_DIRECT the large tensors sit at their file
// offset modulo 4096 and most of the bytes skip the slots, a tensor that would lose its
// element alignment keeps 64 bytes and goes through them. A signed file (LoadOptions::
// signed_file) read that way is hashed from the tensors' memory: its digest checks out, and
// a wrong digest fails the load. A torch.save zip (written by our torch writer) read with
// O_DIRECT keeps its storages' 64-byte alignment and places them by file offset too.
#include "../support/test_support.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/model_signing.hpp"
#include "ringload/ringload.hpp"
#include "ringload/serializer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace ringload {
namespace {

struct Planned {
    std::string name;
    std::string dtype;
    std::uint64_t numel = 0;
    std::size_t itemsize = 0;
};

// The tensors, in file order: a small one, two large ones at 2-byte phases, one whose offset
// breaks its 4-byte alignment, and bytes at an odd offset.
const std::vector<Planned> tensors = {
    {"small", "F16", 1000, 2},         {"big_f32", "F32", 300'001, 4},        {"big_f16", "F16", 700'001, 2},
    {"misaligned", "F32", 400'000, 4}, {"odd_bytes", "U8", (3 << 20) + 5, 1},
};

struct File {
    std::filesystem::path path;
    std::vector<std::byte> bytes;
    std::vector<std::uint64_t> data_offsets; // absolute, per tensor
};

File write_model(const std::filesystem::path& folder) {
    nlohmann::ordered_json header;
    std::uint64_t cursor = 0;
    for (const Planned& tensor : tensors) {
        const std::uint64_t length = tensor.numel * tensor.itemsize;
        header[tensor.name] = {
            {"dtype", tensor.dtype}, {"shape", {tensor.numel}}, {"data_offsets", {cursor, cursor + length}}};
        cursor += length;
    }
    std::string text = header.dump();
    // Pad so that the data starts 16 bytes past a page boundary (8 + header ≡ 16 mod 4096).
    const std::size_t want = 4096 + 8;
    text.append((want - text.size() % 4096) % 4096, ' ');
    File file;
    file.path = folder / "awkward.safetensors";
    const std::uint64_t header_length = text.size();
    for (int k = 0; k < 8; ++k) {
        file.bytes.push_back(static_cast<std::byte>((header_length >> (8 * k)) & 0xff));
    }
    for (char c : text) {
        file.bytes.push_back(static_cast<std::byte>(c));
    }
    const std::uint64_t data_start = file.bytes.size();
    std::mt19937 random(7);
    file.bytes.resize(data_start + cursor);
    for (std::uint64_t at = data_start; at < file.bytes.size(); ++at) {
        file.bytes[at] = static_cast<std::byte>(random());
    }
    std::uint64_t offset = data_start;
    for (const Planned& tensor : tensors) {
        file.data_offsets.push_back(offset);
        offset += tensor.numel * tensor.itemsize;
    }
    testing::write_file(file.path, file.bytes);
    return file;
}

std::size_t index_of(const std::string& name) {
    for (std::size_t k = 0; k < tensors.size(); ++k) {
        if (tensors[k].name == name) {
            return k;
        }
    }
    ADD_FAILURE() << name;
    return 0;
}

void expect_file_bytes(const LoadedModel& model, const File& file) {
    ASSERT_EQ(model.tensors.size(), tensors.size());
    for (const LoadedTensor& tensor : model.tensors) {
        const std::size_t k = index_of(tensor.info.name);
        const std::uint64_t length = tensors[k].numel * tensors[k].itemsize;
        ASSERT_EQ(tensor.bytes.size(), length) << tensor.info.name;
        EXPECT_TRUE(std::equal(tensor.bytes.begin(), tensor.bytes.end(), file.bytes.begin() + file.data_offsets[k]))
            << tensor.info.name;
    }
}

std::uintptr_t address_of(const LoadedTensor& tensor) {
    return reinterpret_cast<std::uintptr_t>(tensor.bytes.data());
}

// Under the build tree, not $TMPDIR: a tmpfs there would refuse O_DIRECT.
TEST(InPlaceRead, AwkwardOffsetsLoadTheFileBytesDirectAndBuffered) {
    testing::TempDir folder(std::filesystem::current_path());
    const File file = write_model(folder.path());
    ASSERT_EQ(file.data_offsets[0] % 4096, 16u);
    for (ReadMode mode : {ReadMode::direct, ReadMode::buffered}) {
        OpenOptions open_options;
        open_options.read_mode = mode;
        auto opened = Deserializer::open(file.path.string(), open_options);
        ASSERT_TRUE(opened) << opened.error().message();
        auto model = opened->load();
        ASSERT_TRUE(model) << model.error().message();
        expect_file_bytes(*model, file);
        EXPECT_EQ(model->bytes_read, file.bytes.size() - file.data_offsets[0]) << model->how;
        if (mode == ReadMode::buffered) {
            continue; // the page cache copies to any address: placement stays at 64 bytes
        }
        ASSERT_NE(model->how.find("O_DIRECT"), std::string::npos) << "this test's folder must allow O_DIRECT";
        for (const LoadedTensor& tensor : model->tensors) {
            const std::size_t k = index_of(tensor.info.name);
            const bool placed_by_offset = tensor.info.name.starts_with("big") || tensor.info.name == "odd_bytes";
            if (placed_by_offset) {
                EXPECT_EQ(address_of(tensor) % 4096, file.data_offsets[k] % 4096) << tensor.info.name;
            } else {
                EXPECT_EQ(address_of(tensor) % 64, 0u) << tensor.info.name;
            }
        }
        // The aligned interiors of the three placed tensors (8.2 MB of 9.5) skip the slots.
        const std::uint64_t interiors = 1'200'004 + 1'400'002 + (3 << 20) + 5 - 3 * 8192;
        EXPECT_GE(model->bytes_in_place, interiors) << model->how;
        EXPECT_LT(model->bytes_in_place, model->bytes_read);
    }
}

std::shared_ptr<SignedFile> signed_file_of(const File& file) {
    Sha256 sha;
    sha.update(file.bytes);
    const Sha256Digest digest = sha.finish();
    auto signed_file = std::make_shared<SignedFile>();
    signed_file->path = file.path.string();
    signed_file->signature_file = "model.sig";
    signed_file->size_bytes = file.bytes.size();
    signed_file->digests.push_back(std::string(reinterpret_cast<const char*>(digest.data()), digest.size()));
    return signed_file;
}

TEST(InPlaceRead, ASignedFileReadInPlaceIsHashedFromTheTensorsAndAWrongDigestFails) {
    testing::TempDir folder(std::filesystem::current_path());
    const File file = write_model(folder.path());
    OpenOptions open_options;
    open_options.read_mode = ReadMode::direct;
    auto opened = Deserializer::open(file.path.string(), open_options);
    ASSERT_TRUE(opened) << opened.error().message();
    LoadOptions options;
    options.signed_file = signed_file_of(file);
    auto model = opened->load(options);
    ASSERT_TRUE(model) << model.error().message();
    expect_file_bytes(*model, file);
    EXPECT_GT(model->bytes_in_place, file.bytes.size() / 2) << model->how;

    auto wrong = signed_file_of(file);
    wrong->digests[0][5] ^= 1;
    options.signed_file = wrong;
    auto refused = opened->load(options);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::hash_mismatch);
    EXPECT_NE(refused.error().detail.find("awkward.safetensors does not match its signed SHA-256"), std::string::npos)
        << refused.error().detail;
}

// Slices of a signed file read through the page cache (where a cached file's slices are
// copied out of its mapping otherwise) still read and hash the whole file.
TEST(InPlaceRead, SlicesOfASignedCachedFileAreHashedAndAWrongDigestFails) {
    testing::TempDir folder(std::filesystem::current_path());
    const File file = write_model(folder.path());
    OpenOptions open_options;
    open_options.read_mode = ReadMode::buffered;
    auto opened = Deserializer::open(file.path.string(), open_options);
    ASSERT_TRUE(opened) << opened.error().message();
    const SliceRequest first_rows{0, {{0, 1}}};
    LoadOptions options;
    options.signed_file = signed_file_of(file);
    auto sliced = opened->load_slices({&first_rows, 1}, options);
    ASSERT_TRUE(sliced) << sliced.error().message();
    EXPECT_EQ(sliced->bytes_read, file.bytes.size()) << sliced->how; // the whole file, for its hash

    auto wrong = signed_file_of(file);
    wrong->digests[0][5] ^= 1;
    options.signed_file = wrong;
    auto refused = opened->load_slices({&first_rows, 1}, options);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::hash_mismatch) << refused.error().message();
}

TEST(InPlaceRead, TorchStoragesSitAtTheirFileOffsetAndKeep64Bytes) {
    testing::TempDir folder(std::filesystem::current_path());
    std::mt19937 random(11);
    std::vector<std::vector<std::byte>> data;
    for (std::size_t bytes : {std::size_t{1000}, std::size_t{(2 << 20) + 36}, std::size_t{(3 << 20) + 4}}) {
        data.emplace_back(bytes);
        for (std::byte& b : data.back()) {
            b = static_cast<std::byte>(random());
        }
    }
    std::vector<TensorToWrite> tensors;
    for (std::size_t k = 0; k < data.size(); ++k) {
        tensors.push_back({{"t" + std::to_string(k)}, DType::float32, {data[k].size() / 4}, data[k]});
    }
    const std::string path = (folder.path() / "model.pt").string();
    auto written = write_torch(path, tensors);
    ASSERT_TRUE(written) << written.error().message();
    OpenOptions open_options;
    open_options.read_mode = ReadMode::direct;
    auto opened = Deserializer::open(path, open_options);
    ASSERT_TRUE(opened) << opened.error().message();
    auto model = opened->load();
    ASSERT_TRUE(model) << model.error().message();
    ASSERT_NE(model->how.find("O_DIRECT"), std::string::npos) << model->how;
    ASSERT_EQ(model->tensors.size(), data.size());
    const std::vector<std::byte> file = testing::read_file(path);
    for (const LoadedTensor& tensor : model->tensors) {
        const std::size_t k = std::stoul(tensor.info.name.substr(1));
        ASSERT_EQ(tensor.bytes.size(), data[k].size()) << tensor.info.name;
        EXPECT_TRUE(std::equal(tensor.bytes.begin(), tensor.bytes.end(), data[k].begin())) << tensor.info.name;
        EXPECT_EQ(address_of(tensor) % 64, 0u) << tensor.info.name;
        if (data[k].size() >= (1 << 20)) {
            const auto at = std::search(file.begin(), file.end(), data[k].begin(), data[k].begin() + 64);
            ASSERT_NE(at, file.end());
            EXPECT_EQ(address_of(tensor) % 4096, static_cast<std::size_t>(at - file.begin()) % 4096)
                << tensor.info.name;
        }
    }
    EXPECT_GE(model->bytes_in_place, (5u << 20) - 4 * 4096) << model->how;
}

} // namespace
} // namespace ringload
