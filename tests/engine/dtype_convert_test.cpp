// tests/engine/dtype_convert_test.cpp
//
// The CPU dtype conversions against values worked out by hand from IEEE 754 (binary16 and
// bfloat16 rounding to nearest even, overflow, subnormals, NaN). tests/bindings/dtype_test.py
// checks whole loads against torch's own casts.
#include "ringload/engine/dtype_convert.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace ringload {
namespace {

TEST(DtypeConvert, FloatToHalfRoundsToNearestEven) {
    EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
    EXPECT_EQ(float_to_half_bits(-2.0f), 0xC000);
    EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
    EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);                     // the largest half
    EXPECT_EQ(float_to_half_bits(65519.0f), 0x7BFF);                     // below the midpoint to infinity
    EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);                     // the midpoint rounds to infinity
    EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -24)), 0x0001);        // the smallest subnormal
    EXPECT_EQ(float_to_half_bits(std::ldexp(1.0f, -25)), 0x0000);        // a tie: to even (zero)
    EXPECT_EQ(float_to_half_bits(std::ldexp(3.0f, -25)), 0x0002);        // a tie: to even (two)
    EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(1.0f, -11)), 0x3C00); // tie, even stays
    EXPECT_EQ(float_to_half_bits(1.0f + std::ldexp(3.0f, -11)), 0x3C02); // tie, odd goes up
    EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::infinity()), 0x7C00);
    EXPECT_EQ(float_to_half_bits(-std::numeric_limits<float>::infinity()), 0xFC00);
    EXPECT_EQ(float_to_half_bits(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
}

TEST(DtypeConvert, HalfToFloatIsExact) {
    EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
    EXPECT_EQ(half_bits_to_float(0x0001), std::ldexp(1.0f, -24));
    EXPECT_EQ(half_bits_to_float(0x03FF), std::ldexp(1023.0f, -24)); // the largest subnormal
    EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
    EXPECT_EQ(half_bits_to_float(0x3555), 0.333251953125f);
    EXPECT_TRUE(std::isinf(half_bits_to_float(0xFC00)) && half_bits_to_float(0xFC00) < 0);
    EXPECT_TRUE(std::isnan(half_bits_to_float(0x7E00)));
    EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
}

TEST(DtypeConvert, FloatToBfloat16RoundsToNearestEven) {
    EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3F80);
    EXPECT_EQ(float_to_bfloat16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3F80);       // tie, even stays
    EXPECT_EQ(float_to_bfloat16_bits(1.0f + std::ldexp(3.0f, -8)), 0x3F82);       // tie, odd goes up
    EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::max()), 0x7F80); // rounds to infinity
    EXPECT_EQ(float_to_bfloat16_bits(std::numeric_limits<float>::quiet_NaN()), 0x7FC0);
    EXPECT_EQ(bfloat16_bits_to_float(0xC040), -3.0f);
}

TEST(DtypeConvert, OnlyFloatingTypesConvert) {
    EXPECT_TRUE(converts(DType::float32, DType::bfloat16));
    EXPECT_TRUE(converts(DType::float64, DType::float16));
    EXPECT_FALSE(converts(DType::float16, DType::float16));
    EXPECT_FALSE(converts(DType::int64, DType::float16)); // other tensors keep their type
    EXPECT_FALSE(converts(DType::float32, DType::int8));
}

TEST(DtypeConvert, BuffersConvertElementByElement) {
    const std::vector<double> in = {1.5, -0.25, 1e300, 3.0};
    std::vector<std::uint16_t> half(in.size());
    convert_elements(reinterpret_cast<std::byte*>(half.data()), DType::float16,
                     reinterpret_cast<const std::byte*>(in.data()), DType::float64, in.size());
    EXPECT_EQ(half, (std::vector<std::uint16_t>{0x3E00, 0xB400, 0x7C00, 0x4200}));
    std::vector<float> back(in.size());
    convert_elements(reinterpret_cast<std::byte*>(back.data()), DType::float32,
                     reinterpret_cast<const std::byte*>(half.data()), DType::float16, half.size());
    EXPECT_EQ(back[0], 1.5f);
    EXPECT_EQ(back[1], -0.25f);
    EXPECT_TRUE(std::isinf(back[2]));
    EXPECT_EQ(back[3], 3.0f);
}

} // namespace
} // namespace ringload
