// tests/formats/tensorizer_parse_test.cpp
//
// The small parsers on their own: dtype strings, structured names and the name tree.
#include "formats/tensorizer/dtype_string.hpp"
#include "formats/tensorizer/tensor_name.hpp"

#include <gtest/gtest.h>

namespace ringload::tensorizer {
namespace {

using namespace std::string_literals;

TEST(TensorizerDType, ParsesNumpyAndOpaqueStrings) {
    EXPECT_EQ(parse_dtype_string("<f4")->dtype, DType::float32);
    EXPECT_EQ(parse_dtype_string("|b1")->dtype, DType::boolean);
    EXPECT_EQ(parse_dtype_string("<c16")->dtype, DType::complex128);
    auto bf16 = parse_dtype_string("<V2\0torch.bfloat16"s);
    ASSERT_TRUE(bf16);
    EXPECT_EQ(bf16->dtype, DType::bfloat16);
    EXPECT_TRUE(bf16->opaque);
    EXPECT_EQ(parse_dtype_string("|V1\0torch.float8_e4m3fn"s)->dtype, DType::float8_e4m3fn);
}

TEST(TensorizerDType, RejectsWhatNoWriterProduces) {
    for (auto text : {">f4"s, "<f3"s, "<x4"s, "<V2\0torch.bfloat16\0x"s, "<V4\0torch.bfloat16"s, "<V2"s, "f"s}) {
        auto parsed = parse_dtype_string(text);
        EXPECT_FALSE(parsed) << text;
    }
}

TEST(TensorizerDType, RoundTripsEveryDType) {
    for (int i = 0; i <= static_cast<int>(last_dtype); ++i) {
        auto dtype = static_cast<DType>(i);
        auto parsed = parse_dtype_string(dtype_string(dtype));
        ASSERT_TRUE(parsed) << torch_name(dtype);
        EXPECT_EQ(parsed->dtype, dtype);
    }
}

TEST(TensorizerName, ParsesPlainAndStructuredNames) {
    auto plain = parse_tensor_name("layer.0.weight");
    ASSERT_TRUE(plain);
    EXPECT_EQ(*plain, (std::vector<PathComponent>{"layer.0.weight"s}));
    auto path = parse_tensor_name("\x1e[\"model\",\"w\\u00e9ight\\ud83d\\ude00\",0]");
    ASSERT_TRUE(path);
    EXPECT_EQ(*path, (std::vector<PathComponent>{"model"s, "w\xc3\xa9ight\xf0\x9f\x98\x80"s, std::uint64_t{0}}));
}

TEST(TensorizerName, RejectsMalformedPaths) {
    for (auto text : {""s, "\x1e[]"s, "\x1e[1.5]"s, "\x1e[-1]"s, "\x1e{\"a\":1}"s, "\x1e[\"a\"\n]"s, "\x1e["s}) {
        auto parsed = parse_tensor_name(text);
        ASSERT_FALSE(parsed) << text;
        EXPECT_EQ(parsed.error().code, errc::invalid_tensor_name);
    }
}

TEST(TensorizerName, EncodesAsTensorizerDoes) {
    std::vector<PathComponent> path{"model"s, "w\xc3\xa9ight"s, std::uint64_t{3}};
    EXPECT_EQ(encode_structured_name(path), "\x1e[\"model\",\"w\\u00e9ight\",3]");
}

TEST(TensorizerNameTree, RejectsConflictingPaths) {
    auto tensor = [](std::vector<PathComponent> path) {
        TensorInfo info;
        info.path = std::move(path);
        return info;
    };
    EXPECT_TRUE(check_name_tree({tensor({"a"s, "b"s}), tensor({"a"s, "c"s})}));
    EXPECT_FALSE(check_name_tree({tensor({"a"s}), tensor({"a"s})}));
    EXPECT_FALSE(check_name_tree({tensor({"a"s}), tensor({"a"s, "b"s})}));
    EXPECT_FALSE(check_name_tree({tensor({"a"s, "b"s}), tensor({"a"s})}));
    EXPECT_FALSE(check_name_tree({tensor({"a"s, std::uint64_t{0}}), tensor({"a"s, "x"s})}));
}

} // namespace
} // namespace ringload::tensorizer
