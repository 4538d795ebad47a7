// tests/formats/safetensors_reader_test.cpp
//
// The safetensors header checks, one malformed header each, against what the reference
// implementation (safetensors 0.4, Rust `validate`) refuses; and what a valid one yields.
#include "formats/safetensors/header.hpp"

#include "formats/safetensors/dtype_names.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace ringload::safetensors {
namespace {

std::span<const std::byte> as_bytes(const std::string& text) {
    return {reinterpret_cast<const std::byte*>(text.data()), text.size()};
}

// The Index of a file made of the length field, `header`, then `data_bytes` of data.
Result<Index> parse(const std::string& header, std::uint64_t data_bytes) {
    return parse_header(as_bytes(header), length_field_bytes + header.size() + data_bytes);
}

std::string length_field(std::uint64_t length) {
    std::string bytes(8, '\0');
    for (int k = 0; k < 8; ++k) {
        bytes[k] = static_cast<char>((length >> (8 * k)) & 0xff);
    }
    return bytes;
}

TEST(SafetensorsHeader, ReadsTensorsInDataOrderAndMetadataInFileOrder) {
    const std::string header = R"({"z":{"dtype":"BF16","shape":[2,3],"data_offsets":[8,20]},)"
                               R"("__metadata__":{"format":"pt","b":"1","a":"2"},)"
                               R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                               R"("e":{"dtype":"I64","shape":[0],"data_offsets":[20,20]}})";
    auto index = parse(header, 20);
    ASSERT_TRUE(index) << index.error().message();
    EXPECT_EQ(index->format_name(), "safetensors");
    ASSERT_EQ(index->tensors.size(), 3u);
    EXPECT_EQ(index->tensors[0].name, "a");
    EXPECT_EQ(index->tensors[1].name, "z");
    EXPECT_EQ(index->tensors[1].dtype, DType::bfloat16);
    EXPECT_EQ(index->tensors[1].shape, (std::vector<std::uint64_t>{2, 3}));
    EXPECT_EQ(index->tensors[1].data_offset_bytes, 8 + header.size() + 8);
    EXPECT_EQ(index->tensors[2].byte_length, 0u);
    ASSERT_EQ(index->metadata.size(), 3u);
    EXPECT_EQ(index->metadata[0], (std::pair<std::string, std::string>{"format", "pt"}));
    EXPECT_EQ(index->metadata[2].first, "a");
}

TEST(SafetensorsHeader, AcceptsAnEmptyFileOfTensorsAndZeroDTensors) {
    EXPECT_TRUE(parse("{}", 0));
    auto scalar = parse(R"({"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]}})", 8);
    ASSERT_TRUE(scalar);
    EXPECT_TRUE(scalar->tensors[0].shape.empty());
}

struct BadHeader {
    const char* what;
    std::string header;
    std::uint64_t data_bytes;
    const char* message_part;
};

TEST(SafetensorsHeader, RefusesWhatTheReferenceRefuses) {
    const BadHeader cases[] = {
        {"not JSON", "{\"a\":", 0, "not a JSON object"},
        {"does not start with {", " {}", 0, "does not start with '{'"},
        {"unknown dtype", R"({"a":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16, "unknown dtype"},
        {"shape/size mismatch", R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8, "hold 8"},
        {"negative dim", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, "non-negative"},
        {"offsets reversed", R"({"a":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 4, "end before"},
        {"offsets out of range", R"({"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}})", 4, "ends at byte"},
        {"hole",
         R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
         6, "hole"},
        {"overlap",
         R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[2,4]}})",
         4, "overlaps"},
        {"trailing bytes", R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}})", 3, "ends at byte"},
        {"shape overflow", R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}})", 8,
         "overflows"},
        {"missing field", R"({"a":{"dtype":"U8","shape":[2]}})", 2, "needs"},
        {"metadata not strings", R"({"__metadata__":{"n":1}})", 0, "not a string"},
    };
    for (const auto& bad : cases) {
        auto index = parse(bad.header, bad.data_bytes);
        ASSERT_FALSE(index) << bad.what;
        EXPECT_NE(index.error().message().find(bad.message_part), std::string::npos)
            << bad.what << ": " << index.error().message();
    }
}

// Two readers: a fast scan of the headers writers make, and the general JSON parser for the
// rest (escapes, non-ASCII, extra fields, odd numbers). Both must give the same Index.
TEST(SafetensorsHeader, TheFastScanAndTheGeneralParserAgree) {
    const std::string plain = R"({"__metadata__":{"k":"v"},"ab":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                              R"("c":{"shape":[1],"data_offsets":[2,3],"dtype":"I8"}})";
    // Same meaning: an escaped name, spaces, an extra field, a non-ASCII metadata value.
    const std::string general = R"({ "__metadata__" : {"k":"v"}, "a\u0062" : {"dtype":"U8","shape":[2],)"
                                R"("data_offsets":[0,2],"extra":{"x":[1.5]}}, "c":{"shape":[1],"data_offsets":[2,3],)"
                                R"("dtype":"I8"} })";
    for (const auto& header : {plain, general}) {
        auto index = parse(header, 3);
        ASSERT_TRUE(index) << index.error().message();
        ASSERT_EQ(index->tensors.size(), 2u);
        EXPECT_EQ(index->tensors[0].name, "ab");
        EXPECT_EQ(index->tensors[1].name, "c");
        EXPECT_EQ(index->tensors[1].dtype, DType::int8);
        EXPECT_EQ(index->tensors[1].data_offset_bytes, 8 + header.size() + 2);
        ASSERT_EQ(index->metadata.size(), 1u);
    }
    // The reference keeps the last of two entries with one name; here the header is refused,
    // whichever reader finds it (the escaped "a\u0062" is "ab" once decoded).
    const std::vector<std::string> twice = {
        R"({"ab":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"ab":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
        R"({"ab":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a\u0062":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
        R"({"__metadata__":{"k":"1","k":"2"}})",
        R"({"__metadata__":{"k":"1"},"__metadata__":{"j":"2"}})",
    };
    for (const auto& header : twice) {
        auto index = parse(header, header.find("data_offsets") == std::string::npos ? 0 : 2);
        ASSERT_FALSE(index) << header;
        EXPECT_NE(index.error().message().find("twice"), std::string::npos) << index.error().message();
    }
}

// F4 counts 4-bit values in the header; torch's float4_e2m1fn_x2 (ours) counts bytes.
TEST(SafetensorsHeader, F4ShapesCountValuesAndOursCountBytes) {
    auto index = parse(R"({"w":{"dtype":"F4","shape":[2,6],"data_offsets":[0,6]}})", 6);
    ASSERT_TRUE(index) << index.error().message();
    EXPECT_EQ(index->tensors[0].dtype, DType::float4_e2m1fn_x2);
    EXPECT_EQ(index->tensors[0].shape, (std::vector<std::uint64_t>{2, 3}));
    EXPECT_EQ(index->tensors[0].byte_length, 6u);
    for (const char* header : {R"({"w":{"dtype":"F4","shape":[2,5],"data_offsets":[0,5]}})",
                               R"({"w":{"dtype":"F4","shape":[],"data_offsets":[0,1]}})"}) {
        auto refused = parse(header, 6);
        ASSERT_FALSE(refused) << header;
        EXPECT_NE(refused.error().detail.find("two values a byte"), std::string::npos) << refused.error().detail;
    }
    // The writer's side: a header's shape for ours, and no F4 scalar.
    EXPECT_EQ(header_shape_of(DType::float4_e2m1fn_x2, {2, 3}).value(), (std::vector<std::uint64_t>{2, 6}));
    EXPECT_FALSE(header_shape_of(DType::float4_e2m1fn_x2, {}));
    EXPECT_EQ(header_shape_of(DType::uint8, {2, 3}).value(), (std::vector<std::uint64_t>{2, 3}));
}

TEST(SafetensorsHeader, RefusesDeepNestingWithoutRecursing) {
    // A million nested lists in "shape": refused, no stack overflow (the reference stops at 128).
    const std::string deep = R"({"a":{"dtype":"U8","shape":)" + std::string(1'000'000, '[') +
                             std::string(1'000'000, ']') + R"(,"data_offsets":[0,0]}})";
    auto index = parse(deep, 0);
    ASSERT_FALSE(index);
    EXPECT_NE(index.error().message().find("nests deeper"), std::string::npos) << index.error().message();
}

TEST(SafetensorsHeader, ChecksTheLengthFieldAgainstTheFile) {
    EXPECT_EQ(*parse_header_length(as_bytes(length_field(2)), 10), 2u);
    auto too_large = parse_header_length(as_bytes(length_field(100'000'001)), 200'000'000);
    ASSERT_FALSE(too_large);
    EXPECT_NE(too_large.error().message().find("100 MB"), std::string::npos);
    auto past_end = parse_header_length(as_bytes(length_field(100)), 50);
    ASSERT_FALSE(past_end);
    EXPECT_EQ(past_end.error().code, errc::truncated);
    EXPECT_FALSE(parse_header_length(as_bytes(std::string("\x01\x00", 2)), 2));
}

} // namespace
} // namespace ringload::safetensors
