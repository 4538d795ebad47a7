// tests/bindings/mapped_load_test.cpp
//
// Placement::mapped_file (bindings/cpp/src/load/mapped_load.cpp): a local safetensors file's
// tensors left in its own pages. The mapped load must give exactly the arena load's tensors,
// hand each over as it arrives, keep the file unchanged when a tensor is written, refuse what
// it cannot map with the reason (and Placement::automatic then take the ring), and turn a file
// that changed since it was indexed into an error, not a fault.
#include "../support/test_support.hpp"
#include "ringload/host_arena.hpp"
#include "ringload/ringload.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace ringload {
namespace {

struct Stored {
    std::string name;
    std::string dtype;
    std::vector<int> shape;
    std::size_t bytes;
};

// A safetensors file of `tensors`, one after another (safetensors leaves no holes), its data
// 8-aligned in the file. Byte i of the data is i * 7 + 3 (mod 256): every tensor's bytes differ.
std::filesystem::path write_safetensors(const std::filesystem::path& path, const std::vector<Stored>& tensors) {
    std::string header = "{";
    std::size_t offset = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const Stored& t = tensors[i];
        std::string shape;
        for (std::size_t k = 0; k < t.shape.size(); ++k) {
            shape += (k == 0 ? "" : ",") + std::to_string(t.shape[k]);
        }
        header += (i == 0 ? "\"" : ",\"") + t.name + "\":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape +
                  "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t.bytes) + "]}";
        offset += t.bytes;
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::vector<std::byte> bytes(8 + header.size() + offset);
    const std::uint64_t length = header.size();
    std::memcpy(bytes.data(), &length, 8);
    std::memcpy(bytes.data() + 8, header.data(), header.size());
    for (std::size_t i = 0; i < offset; ++i) {
        bytes[8 + header.size() + i] = static_cast<std::byte>((i * 7 + 3) & 0xFF);
    }
    return testing::write_file(path, bytes);
}

// In an order that keeps every element aligned: data offsets 0, 8, 40, 100, 118, 118.
const std::vector<Stored> model_tensors = {
    {"scale", "F64", {}, 8},   {"ids", "I64", {4}, 32},     {"embed", "F32", {3, 5}, 60},
    {"norm", "BF16", {9}, 18}, {"empty", "F16", {0, 4}, 0}, {"mask", "U8", {7}, 7},
};

Result<LoadedModel> load_with(const std::filesystem::path& path, Placement placement, LoadOptions options = {}) {
    RL_TRY(opened, Deserializer::open(path.string()));
    options.placement = placement;
    return opened.load(options);
}

std::vector<std::byte> bytes_of(const LoadedTensor& tensor) {
    return {tensor.bytes.begin(), tensor.bytes.end()};
}

TEST(MappedLoad, GivesTheArenaLoadsTensorsInTheFilesOwnPages) {
    testing::TempDir dir;
    const auto path = write_safetensors(dir.path() / "model.safetensors", model_tensors);
    auto arena = load_with(path, Placement::arena);
    ASSERT_TRUE(arena) << arena.error().message();
    auto mapped = load_with(path, Placement::mapped_file);
    ASSERT_TRUE(mapped) << mapped.error().message();
    auto automatic = load_with(path, Placement::automatic);
    ASSERT_TRUE(automatic) << automatic.error().message();

    EXPECT_FALSE(arena->arena->is_mapped_file());
    EXPECT_TRUE(mapped->arena->is_mapped_file());
    EXPECT_FALSE(automatic->arena->is_mapped_file()); // mapped only when asked for (for now)
    EXPECT_NE(mapped->how.find("mapped"), std::string::npos) << mapped->how;
    ASSERT_EQ(mapped->tensors.size(), model_tensors.size());
    EXPECT_EQ(mapped->bytes, arena->bytes);
    for (std::size_t k = 0; k < model_tensors.size(); ++k) {
        const LoadedTensor& ours = mapped->tensors[k];
        EXPECT_EQ(ours.info.name, arena->tensors[k].info.name);
        EXPECT_EQ(ours.info.shape, arena->tensors[k].info.shape);
        EXPECT_EQ(ours.info.dtype, arena->tensors[k].info.dtype);
        EXPECT_EQ(bytes_of(ours), bytes_of(arena->tensors[k])) << ours.info.name;
        EXPECT_EQ(bytes_of(automatic->tensors[k]), bytes_of(arena->tensors[k])) << ours.info.name;
        if (ours.bytes.size() > 0) {
            EXPECT_EQ(reinterpret_cast<std::uintptr_t>(ours.bytes.data()) % itemsize(ours.info.dtype), 0u);
        }
    }
}

TEST(MappedLoad, AWriteToATensorLeavesTheFileAsItWas) {
    testing::TempDir dir;
    const auto path = write_safetensors(dir.path() / "model.safetensors", model_tensors);
    const std::vector<std::byte> before = testing::read_file(path);
    auto mapped = load_with(path, Placement::mapped_file);
    ASSERT_TRUE(mapped) << mapped.error().message();
    std::memset(mapped->tensors[0].bytes.data(), 0xAB, mapped->tensors[0].bytes.size()); // copy on write
    EXPECT_EQ(static_cast<unsigned>(mapped->tensors[0].bytes[0]), 0xABu);
    EXPECT_EQ(testing::read_file(path), before);
    auto again = load_with(path, Placement::mapped_file);
    ASSERT_TRUE(again);
    EXPECT_NE(static_cast<unsigned>(again->tensors[0].bytes[0]), 0xABu);
}

TEST(MappedLoad, HandsEachTensorOverBeforeTheLoadReturnsAndLoadsAFilteredFew) {
    testing::TempDir dir;
    const auto path = write_safetensors(dir.path() / "model.safetensors", model_tensors);
    LoadOptions options;
    options.filter = [](const TensorInfo& tensor) { return tensor.name != "ids"; };
    std::vector<std::string> handed;
    options.on_tensor = [&](const StreamedTensor& streamed) {
        EXPECT_NE(streamed.owner, nullptr);
        EXPECT_EQ(streamed.device, "cpu");
        handed.push_back(streamed.tensor.info.name);
    };
    auto mapped = load_with(path, Placement::mapped_file, options);
    ASSERT_TRUE(mapped) << mapped.error().message();
    EXPECT_EQ(handed, (std::vector<std::string>{"scale", "embed", "norm", "empty", "mask"}));
    ASSERT_EQ(mapped->tensors.size(), 5u);
    auto arena = load_with(path, Placement::arena);
    ASSERT_TRUE(arena);
    EXPECT_EQ(bytes_of(mapped->tensors[1]), bytes_of(arena->tensors[2])); // "embed"
}

TEST(MappedLoad, RefusesWhatItCannotMapAndAutomaticTakesTheRingThere) {
    testing::TempDir dir;
    const auto path = write_safetensors(dir.path() / "model.safetensors", model_tensors);
    const auto refused_because = [&](LoadOptions options, const std::string& why) {
        auto mapped = load_with(path, Placement::mapped_file, options);
        ASSERT_FALSE(mapped) << why;
        EXPECT_EQ(mapped.error().code, errc::unsupported);
        EXPECT_NE(mapped.error().detail.find(path.string() + ": cannot leave the tensors in the file's pages: "),
                  std::string::npos)
            << mapped.error().detail;
        EXPECT_NE(mapped.error().detail.find(why), std::string::npos) << mapped.error().detail;
        auto automatic = load_with(path, Placement::automatic, options);
        ASSERT_TRUE(automatic) << automatic.error().message();
        EXPECT_FALSE(automatic->arena->is_mapped_file()) << why;
    };
    std::vector<std::vector<std::byte>> memory(model_tensors.size(), std::vector<std::byte>(64));
    std::size_t next = 0;
    LoadOptions given;
    given.destination = [&](const TensorInfo&) { return memory[next++ % memory.size()].data(); };
    refused_because(given, "the caller gives the tensors' memory");
    LoadOptions convert;
    convert.dtype = DType::float16;
    refused_because(convert, "converts to another dtype");

    const auto shifted =
        write_safetensors(dir.path() / "shifted.safetensors", {{"a", "U8", {2}, 2}, {"b", "F32", {2}, 8}});
    auto misaligned = load_with(shifted, Placement::mapped_file);
    ASSERT_FALSE(misaligned);
    EXPECT_NE(misaligned.error().detail.find("tensor 'b' lies at byte " +
                                             std::to_string(std::filesystem::file_size(shifted) - 8) +
                                             ", not a multiple of its element size"),
              std::string::npos)
        << misaligned.error().detail;
    auto through_ring = load_with(shifted, Placement::automatic);
    ASSERT_TRUE(through_ring) << through_ring.error().message();
    EXPECT_EQ(static_cast<unsigned>(through_ring->tensors[1].bytes[0]), (2 * 7 + 3) & 0xFFu);

    auto tensorizer = load_with(testing::tensorizer_dir() / "basic_v1.tensors", Placement::mapped_file);
    ASSERT_FALSE(tensorizer);
    EXPECT_NE(tensorizer.error().detail.find("only safetensors files are mapped, this is a tensorizer file"),
              std::string::npos)
        << tensorizer.error().detail;
}

TEST(MappedLoad, AFileThatChangedSinceItWasIndexedIsAnErrorNotAFault) {
    testing::TempDir dir;
    const auto path = write_safetensors(dir.path() / "model.safetensors", model_tensors);
    auto opened = Deserializer::open(path.string());
    ASSERT_TRUE(opened);
    std::filesystem::resize_file(path, std::filesystem::file_size(path) - 16);
    LoadOptions options;
    options.placement = Placement::mapped_file;
    auto loaded = opened->load(options);
    ASSERT_FALSE(loaded);
    EXPECT_NE(loaded.error().detail.find("changed size since its index was read"), std::string::npos)
        << loaded.error().detail;
    EXPECT_EQ(loaded.error().detail.rfind(path.string(), 0), 0u) << loaded.error().detail;
}

TEST(MappedLoad, ACancelledLoadSaysSo) {
    testing::TempDir dir;
    const auto path = write_safetensors(dir.path() / "model.safetensors", model_tensors);
    CancelToken cancel;
    cancel.cancel();
    LoadOptions options;
    options.cancel = &cancel;
    auto loaded = load_with(path, Placement::mapped_file, options);
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.error().code, errc::cancelled);
}

} // namespace
} // namespace ringload
