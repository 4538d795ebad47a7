// tests/formats/convert_stream_test.cpp
//
// Streamed conversion (ringload/convert.hpp) through the public API: each target format's
// bytes equal what its writer makes from the same tensors held in memory, while the source
// is read in several batches and no more than the budget (plus what the writes in flight
// read) is held at once; a tensor larger than the budget still goes through whole; a source
// that fails part way (a hash mismatch in a late tensor), or a cancel, leaves no target.
#include "../support/test_support.hpp"
#include "ringload/ringload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

namespace ringload {
namespace {

constexpr std::uint64_t mib = 1 << 20;

// 40 tensors of 64 KiB to 1.5 MiB in three dtypes, and one of 3 MiB: a model in miniature.
struct Model {
    std::vector<std::vector<std::byte>> bytes;
    std::vector<TensorToWrite> tensors;
    std::uint64_t largest = 0;
};

Model make_model() {
    Model model;
    const DType dtypes[] = {DType::float32, DType::float16, DType::bfloat16};
    std::mt19937 random(7);
    for (std::size_t i = 0; i <= 40; ++i) {
        const DType dtype = dtypes[i % 3];
        const std::uint64_t rows = i == 40 ? 3 * mib / 1024 / itemsize(dtype) : 16 + (i * 37) % 368;
        std::vector<std::byte> bytes(static_cast<std::size_t>(rows * 1024 * itemsize(dtype)));
        for (auto& b : bytes) {
            b = static_cast<std::byte>(random());
        }
        model.largest = std::max<std::uint64_t>(model.largest, bytes.size());
        model.bytes.push_back(std::move(bytes));
    }
    for (std::size_t i = 0; i <= 40; ++i) {
        const DType dtype = dtypes[i % 3];
        const std::uint64_t rows = model.bytes[i].size() / 1024 / itemsize(dtype);
        std::vector<PathComponent> path{std::string("layers"), std::uint64_t{i / 4}, "w" + std::to_string(i % 4)};
        model.tensors.push_back({std::move(path), dtype, {rows, 1024}, model.bytes[i]});
    }
    return model;
}

// A small write ring (4 x 1 MiB), so that what the writes in flight hold is small too.
ConvertOptions small_ring(std::uint64_t budget) {
    ConvertOptions options;
    options.memory_budget_bytes = budget;
    options.write_slot_count = 4;
    options.write_slot_size_bytes = mib;
    return options;
}

// The most a conversion may hold: the budget, the tensors of the writes in flight (the ring,
// and one tensor straddling each end), never the model (~30 MiB).
std::uint64_t most_held(const ConvertOptions& options, std::uint64_t largest) {
    return options.memory_budget_bytes + options.write_slot_count * options.write_slot_size_bytes + 2 * largest;
}

// name -> bytes, as loaded.
std::map<std::string, std::vector<std::byte>> loaded_by_name(const std::string& path) {
    std::map<std::string, std::vector<std::byte>> tensors;
    auto source = Deserializer::open(path);
    EXPECT_TRUE(source) << source.error().message();
    auto model = source->load();
    EXPECT_TRUE(model) << model.error().message();
    for (const auto& tensor : model->tensors) {
        tensors[tensor.info.display_name()].assign(tensor.bytes.begin(), tensor.bytes.end());
    }
    return tensors;
}

Result<WriteSummary> write_in_memory(const std::string& format, const std::string& path, const Model& model) {
    if (format == "safetensors") {
        return write_safetensors(path, model.tensors);
    }
    if (format == "torch") {
        return write_torch(path, model.tensors);
    }
    return write_tensorizer(path, model.tensors);
}

class ConvertStream : public ::testing::Test {
protected:
    void SetUp() override {
        source_path_ = (dir_.path() / "source.tensors").string();
        auto written = write_tensorizer(source_path_, model_.tensors);
        ASSERT_TRUE(written) << written.error().message();
    }

    Model model_ = make_model();
    testing::TempDir dir_;
    std::string source_path_;
};

TEST_F(ConvertStream, EachFormatMatchesItsWriterWithinTheBudget) {
    const std::uint64_t budget = 2 * mib;
    for (const std::string format : {"safetensors", "torch", "tensorizer"}) {
        SCOPED_TRACE(format);
        const std::string streamed = (dir_.path() / ("streamed." + format)).string();
        const std::string in_memory = (dir_.path() / ("in_memory." + format)).string();
        auto source = Deserializer::open(source_path_);
        ASSERT_TRUE(source) << source.error().message();
        ConvertOptions options = small_ring(budget);
        options.format = format;
        auto converted = convert(*source, streamed, options);
        ASSERT_TRUE(converted) << converted.error().message();
        auto reference = write_in_memory(format, in_memory, model_);
        ASSERT_TRUE(reference) << reference.error().message();

        EXPECT_EQ(testing::read_file(streamed), testing::read_file(in_memory));
        EXPECT_EQ(converted->tensors, model_.tensors.size());
        EXPECT_GE(converted->batches, 8u) << "read in batches of about a quarter of the budget";
        EXPECT_LE(converted->peak_held_bytes, most_held(options, model_.largest));
        EXPECT_GE(converted->peak_held_bytes, model_.largest) << "the 3 MiB tensor is held whole";
    }
}

TEST_F(ConvertStream, RoundTripsThroughEveryFormatWithABudgetOfOneByte) {
    const std::string safetensors = (dir_.path() / "model.safetensors").string();
    const std::string torch = (dir_.path() / "model.pt").string();
    const std::string back = (dir_.path() / "back.tensors").string();
    const ConvertOptions tiny = small_ring(1); // every tensor its own batch, loaded when waited for
    for (const auto& [from, to] : {std::pair{source_path_, safetensors}, {safetensors, torch}, {torch, back}}) {
        auto source = Deserializer::open(from);
        ASSERT_TRUE(source) << source.error().message();
        auto converted = convert(*source, to, tiny);
        ASSERT_TRUE(converted) << converted.error().message();
        EXPECT_EQ(converted->batches, model_.tensors.size());
        EXPECT_LE(converted->peak_held_bytes, most_held(tiny, model_.largest));
    }
    // safetensors reorders (by dtype, then name), so compare tensor by tensor.
    const auto expected = loaded_by_name(source_path_);
    EXPECT_EQ(expected.size(), model_.tensors.size());
    EXPECT_TRUE(loaded_by_name(back) == expected);
}

TEST_F(ConvertStream, ASourceThatFailsLateLeavesNoTarget) {
    std::vector<std::byte> bytes = testing::read_file(source_path_);
    {
        auto source = Deserializer::open(source_path_);
        ASSERT_TRUE(source) << source.error().message();
        const TensorInfo& late = source->index().tensors[37];
        bytes[late.data_offset_bytes + late.data_length_bytes / 2] ^= std::byte{0x40};
    }
    const auto corrupt = testing::write_file(dir_.path() / "corrupt.tensors", bytes);
    const auto target = dir_.path() / "out.safetensors";
    auto source = Deserializer::open(corrupt.string());
    ASSERT_TRUE(source) << source.error().message();
    ConvertOptions options;
    options.memory_budget_bytes = 2 * mib;
    auto converted = convert(*source, target.string(), options);
    ASSERT_FALSE(converted);
    EXPECT_EQ(converted.error().code, errc::hash_mismatch) << converted.error().message();
    EXPECT_NE(converted.error().message().find("corrupt.tensors"), std::string::npos) << converted.error().message();
    EXPECT_NE(converted.error().message().find("layers.9.w1"), std::string::npos) << converted.error().message();
    EXPECT_FALSE(std::filesystem::exists(target));
    EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_.path()), {}), 2) << "only the two sources";
}

TEST_F(ConvertStream, ACancelPartWayLeavesNoTarget) {
    const auto target = dir_.path() / "out.pt";
    auto source = Deserializer::open(source_path_);
    ASSERT_TRUE(source) << source.error().message();
    CancelToken cancel;
    ConvertOptions options;
    options.memory_budget_bytes = 1;
    options.cancel = &cancel;
    options.progress = [&](const Progress& progress) {
        if (progress.bytes_done > 0) {
            cancel.cancel();
        }
    };
    auto converted = convert(*source, target.string(), options);
    ASSERT_FALSE(converted);
    EXPECT_EQ(converted.error().code, errc::cancelled) << converted.error().message();
    EXPECT_FALSE(std::filesystem::exists(target));
}

TEST_F(ConvertStream, RefusesWhatTheTargetCannotHold) {
    auto source = Deserializer::open(source_path_);
    ASSERT_TRUE(source) << source.error().message();
    ConvertOptions options;
    options.encryption = EncryptionParams::random();
    auto converted = convert(*source, (dir_.path() / "out.safetensors").string(), options);
    ASSERT_FALSE(converted);
    EXPECT_EQ(converted.error().code, errc::invalid_argument);
    EXPECT_NE(converted.error().message().find("only tensorizer files can be encrypted"), std::string::npos);

    ConvertOptions no_budget;
    no_budget.memory_budget_bytes = 0;
    converted = convert(*source, (dir_.path() / "out.tensors").string(), no_budget);
    ASSERT_FALSE(converted);
    EXPECT_EQ(converted.error().code, errc::invalid_argument);
}

} // namespace
} // namespace ringload
