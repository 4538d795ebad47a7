// tests/formats/safetensors_writer_test.cpp
//
// The safetensors writer: its header against bytes the reference writer (safetensors 0.4.5)
// made for the same tensors, the 64-byte alignment option, a write through the public API read
// back from the file, the device path (HostDeviceLink), and what it refuses. The Python peer
// test (format_writers_test.py) loads our files with the real library.
#include "../support/host_device_link.hpp"
#include "../support/test_support.hpp"
#include "formats/safetensors/write_graph.hpp"
#include "ringload/engine/write_executor.hpp"
#include "ringload/io/file_sink.hpp"
#include "ringload/serializer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <numeric>

namespace ringload {
namespace {

std::vector<std::byte> pattern(std::size_t length, unsigned seed) {
    std::vector<std::byte> bytes(length);
    for (std::size_t i = 0; i < length; ++i) {
        bytes[i] = static_cast<std::byte>((i * 131 + seed * 17 + 5) % 251);
    }
    return bytes;
}

struct Parsed {
    std::uint64_t header_length = 0;
    nlohmann::ordered_json header;
    std::string header_text;
    std::span<const std::byte> data;
};

Parsed parse(std::span<const std::byte> file) {
    Parsed parsed;
    for (int i = 0; i < 8; ++i) {
        parsed.header_length |= std::to_integer<std::uint64_t>(file[i]) << (8 * i);
    }
    parsed.header_text.assign(reinterpret_cast<const char*>(file.data()) + 8, parsed.header_length);
    parsed.header = nlohmann::ordered_json::parse(parsed.header_text);
    parsed.data = file.subspan(8 + parsed.header_length);
    return parsed;
}

// Tensors and the header safetensors 0.4.5 wrote for them (safetensors.torch.save with
// metadata {"format": "pt"}): sorted by dtype width, then name; padded with spaces to 8.
struct ReferenceCase {
    std::vector<std::vector<std::byte>> bytes;
    std::vector<TensorToWrite> tensors;
};

ReferenceCase reference_case() {
    ReferenceCase c;
    c.bytes = {pattern(2, 1), pattern(12, 2), {}, pattern(2, 3), pattern(8, 4)};
    c.tensors = {
        {{"b"}, DType::boolean, {2}, c.bytes[0]},    {{"a"}, DType::float16, {2, 3}, c.bytes[1]},
        {{"e"}, DType::float32, {0, 3}, c.bytes[2]}, {{"z", std::uint64_t{0}, "w"}, DType::bfloat16, {1}, c.bytes[3]},
        {{"s"}, DType::int64, {}, c.bytes[4]},
    };
    return c;
}

constexpr std::string_view reference_header =
    R"({"__metadata__":{"format":"pt"},"s":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
    R"("e":{"dtype":"F32","shape":[0,3],"data_offsets":[8,8]},"z.0.w":{"dtype":"BF16","shape":[1],)"
    R"("data_offsets":[8,10]},"a":{"dtype":"F16","shape":[2,3],"data_offsets":[10,22]},"b":{"dtype":"BOOL",)"
    R"("shape":[2],"data_offsets":[22,24]}} )";

TEST(SafetensorsHeader, MatchesTheReferenceWriter) {
    auto c = reference_case();
    safetensors::LayoutOptions options;
    options.metadata = {{"format", "pt"}};
    auto graph = safetensors::WriteGraph::create(c.tensors, options, "test.safetensors");
    ASSERT_TRUE(graph) << graph.error().message();
    auto header = (*graph)->header();
    ASSERT_EQ(header.size(), 8 + reference_header.size());
    EXPECT_EQ(parse(header).header_length, 312U);
    EXPECT_EQ(std::string_view(reinterpret_cast<const char*>(header.data()) + 8, header.size() - 8), reference_header);
    EXPECT_EQ((*graph)->plan().length_bytes, header.size() + 24);
}

TEST(SafetensorsHeader, KeepOrderAndAlignment64) {
    auto c = reference_case();
    safetensors::LayoutOptions options;
    options.alignment_bytes = 64;
    options.keep_order = true;
    auto graph = safetensors::WriteGraph::create(c.tensors, options, "test.safetensors");
    ASSERT_TRUE(graph) << graph.error().message();
    auto header = (*graph)->header();
    EXPECT_EQ(header.size() % 64, 0U);
    auto parsed = parse(header);
    EXPECT_FALSE(parsed.header.contains("__metadata__"));
    std::vector<std::string> names;
    std::uint64_t expected_begin = 0;
    for (const auto& [name, entry] : parsed.header.items()) {
        names.push_back(name);
        EXPECT_EQ(entry["data_offsets"][0].get<std::uint64_t>(), expected_begin) << name;
        expected_begin = entry["data_offsets"][1].get<std::uint64_t>();
    }
    EXPECT_EQ(names, (std::vector<std::string>{"b", "a", "e", "z.0.w", "s"}));
    EXPECT_EQ(expected_begin, 24U);
}

TEST(SafetensorsHeader, EveryStorableDTypeHasItsName) {
    const std::pair<DType, std::string_view> names[] = {
        {DType::float64, "F64"},
        {DType::float32, "F32"},
        {DType::float16, "F16"},
        {DType::bfloat16, "BF16"},
        {DType::int64, "I64"},
        {DType::int32, "I32"},
        {DType::int16, "I16"},
        {DType::int8, "I8"},
        {DType::uint8, "U8"},
        {DType::uint16, "U16"},
        {DType::uint32, "U32"},
        {DType::uint64, "U64"},
        {DType::boolean, "BOOL"},
        {DType::float8_e4m3fn, "F8_E4M3"},
        {DType::float8_e5m2, "F8_E5M2"},
        {DType::complex64, "C64"},
        {DType::float8_e8m0fnu, "F8_E8M0"},
        {DType::float8_e4m3fnuz, "F8_E4M3FNUZ"},
        {DType::float8_e5m2fnuz, "F8_E5M2FNUZ"},
    };
    for (const auto& [dtype, name] : names) {
        auto got = safetensors::dtype_name(dtype);
        ASSERT_TRUE(got) << torch_name(dtype);
        EXPECT_EQ(*got, name);
        EXPECT_GE(safetensors::reference_rank(dtype), 0);
    }
    for (DType dtype : {DType::complex128, DType::complex32}) {
        EXPECT_FALSE(safetensors::dtype_name(dtype)) << torch_name(dtype);
    }
}

TEST(SafetensorsWriter, RefusesWhatTheFormatCannotHold) {
    auto bytes = pattern(8, 0);
    auto refused = [&](std::vector<TensorToWrite> tensors, safetensors::LayoutOptions options = {}) {
        auto graph = safetensors::WriteGraph::create(tensors, options, "x.safetensors");
        return graph ? std::string() : graph.error().message();
    };
    TensorToWrite meta{{"m"}, DType::float32, {2}, {}, true};
    EXPECT_NE(refused({meta}).find("meta"), std::string::npos);
    TensorToWrite a{{"a"}, DType::float32, {2}, bytes};
    TensorToWrite a_again{{"a"}, DType::int64, {1}, bytes};
    EXPECT_NE(refused({a, a_again}).find("twice"), std::string::npos);
    TensorToWrite complex{{"c"}, DType::complex128, {1}, bytes};
    EXPECT_NE(refused({complex}).find("complex128"), std::string::npos);
    TensorToWrite reserved{{"__metadata__"}, DType::float32, {2}, bytes};
    EXPECT_NE(refused({reserved}).find("reserved"), std::string::npos);
    TensorToWrite short_bytes{{"s"}, DType::float32, {3}, bytes};
    EXPECT_NE(refused({short_bytes}).find("need 12"), std::string::npos);
    safetensors::LayoutOptions odd;
    odd.alignment_bytes = 16;
    EXPECT_NE(refused({a}, odd).find("8 or 64"), std::string::npos);
    TensorToWrite bad_utf8{{std::string("\xff")}, DType::float32, {2}, bytes};
    EXPECT_NE(refused({bad_utf8}).find("UTF-8"), std::string::npos);
}

TEST(SafetensorsWriter, WritesThroughThePublicApi) {
    testing::TempDir dir;
    auto c = reference_case();
    std::vector<std::byte> big = pattern((3 << 20) + 5, 9); // several 1 MiB windows
    c.tensors.push_back({{"big"}, DType::uint8, {big.size()}, big});
    SafetensorsWriteOptions options;
    options.alignment_bytes = 64;
    options.metadata = {{"b", "2"}, {"a", "1"}};
    options.slot_size_bytes = 1 << 20;
    options.slot_count = 4;
    const auto path = dir.path() / "model.safetensors";
    auto written = write_safetensors(path.string(), c.tensors, options);
    ASSERT_TRUE(written) << written.error().message();
    const auto file = testing::read_file(path);
    ASSERT_EQ(file.size(), written->file_bytes);
    auto parsed = parse(file);
    EXPECT_EQ((8 + parsed.header_length) % 64, 0U);
    EXPECT_EQ(parsed.header["__metadata__"].dump(), R"({"b":"2","a":"1"})");
    for (const auto& tensor : c.tensors) {
        const auto name = safetensors::joined_name(tensor.path);
        const auto& entry = parsed.header[name];
        const auto begin = entry["data_offsets"][0].get<std::uint64_t>();
        const auto end = entry["data_offsets"][1].get<std::uint64_t>();
        ASSERT_EQ(end - begin, tensor.bytes.size()) << name;
        EXPECT_TRUE(std::equal(tensor.bytes.begin(), tensor.bytes.end(), parsed.data.begin() + begin)) << name;
    }
    EXPECT_EQ(written->tensor_bytes, parsed.data.size());
}

// Object stores take any file (gs://, s3://: tests/bindings/gcs_test.py, object_stores_python);
// Redis keys a tensorizer file's records, and a web server takes no upload: both refused before
// anything is written or any connection made.
TEST(SafetensorsWriter, RefusesTargetsThatCannotHoldIt) {
    auto bytes = pattern(8, 0);
    TensorToWrite a{{"a"}, DType::float32, {2}, bytes};
    auto written = write_safetensors("redis://127.0.0.1:1/model", std::span(&a, 1));
    ASSERT_FALSE(written);
    EXPECT_NE(written.error().message().find("holds tensorizer files only, not safetensors"), std::string::npos)
        << written.error().message();
    written = write_safetensors("https://example.com/model.safetensors", std::span(&a, 1));
    ASSERT_FALSE(written);
    EXPECT_NE(written.error().message().find("read-only"), std::string::npos) << written.error().message();
}

// Tensors "on a device" (HostDeviceLink: host memory behind a device API, with delayed copies)
// go through the link's download, and land as they are.
TEST(SafetensorsWriter, DeviceTensorsGoThroughTheLink) {
    testing::TempDir dir;
    testing::HostDeviceLink link;
    auto first = pattern(10000, 1);
    auto second = pattern(3, 2);
    std::vector<TensorToWrite> tensors = {{{"x"}, DType::float32, {2500}, first}, {{"y"}, DType::uint8, {3}, second}};
    for (auto& tensor : tensors) {
        tensor.device = link.ordinal();
    }
    auto graph = safetensors::WriteGraph::create(tensors, {}, "device.safetensors", &link);
    ASSERT_TRUE(graph) << graph.error().message();
    const auto path = dir.path() / "device.safetensors";
    asio::io_context loop{1};
    auto sink = create_file_sink(loop, path.string()).value();
    auto ring = BufferRing::create(loop, {4, 4096}).value();
    WorkerPool pool(2);
    auto run = testing::run_to_completion(loop, run_write_plan(*sink, *ring, pool, (*graph)->plan(), **graph, {}));
    ASSERT_TRUE(run) << run.error().message();
    ASSERT_TRUE(sink->commit((*graph)->plan().length_bytes));
    const auto file = testing::read_file(path); // parsed.data points into it
    auto parsed = parse(file);
    ASSERT_EQ(parsed.data.size(), first.size() + second.size());
    EXPECT_TRUE(std::equal(first.begin(), first.end(), parsed.data.begin()));
    EXPECT_TRUE(std::equal(second.begin(), second.end(), parsed.data.begin() + first.size()));
}

} // namespace
} // namespace ringload
