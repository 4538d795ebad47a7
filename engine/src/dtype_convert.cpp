// engine/src/dtype_convert.cpp
#include "ringload/engine/dtype_convert.hpp"

#include <bit>
#include <cmath>
#include <cstring>

namespace ringload {
namespace {

float float_from_bits(std::uint32_t bits) noexcept {
    return std::bit_cast<float>(bits);
}
std::uint32_t bits_of(float value) noexcept {
    return std::bit_cast<std::uint32_t>(value);
}

template <class T>
T load(const std::byte* in, std::uint64_t i) noexcept {
    T value;
    std::memcpy(&value, in + i * sizeof(T), sizeof(T));
    return value;
}
template <class T>
void store(std::byte* out, std::uint64_t i, T value) noexcept {
    std::memcpy(out + i * sizeof(T), &value, sizeof(T));
}

// Among float32, float16 and bfloat16 the values pass through float, never double: widening
// a signalling NaN to double would quieten it, and torch keeps NaN payloads there.
float read_float(const std::byte* in, DType from, std::uint64_t i) noexcept {
    switch (from) {
        case DType::float32:
            return load<float>(in, i);
        case DType::float16:
            return half_bits_to_float(load<std::uint16_t>(in, i));
        case DType::bfloat16:
            return bfloat16_bits_to_float(load<std::uint16_t>(in, i));
        default:
            return 0;
    }
}

void write_float(std::byte* out, DType to, std::uint64_t i, float value) noexcept {
    switch (to) {
        case DType::float32:
            store<float>(out, i, value);
            break;
        case DType::float16:
            store<std::uint16_t>(out, i, float_to_half_bits(value));
            break;
        case DType::bfloat16:
            store<std::uint16_t>(out, i, float_to_bfloat16_bits(value));
            break;
        default:
            break;
    }
}

// float64 on either side: through double; a 16-bit type is reached through float32, as
// torch's casts do.
double read_element(const std::byte* in, DType from, std::uint64_t i) noexcept {
    return from == DType::float64 ? load<double>(in, i) : read_float(in, from, i);
}

void write_element(std::byte* out, DType to, std::uint64_t i, double value) noexcept {
    if (to == DType::float64) {
        store<double>(out, i, value);
    } else {
        write_float(out, to, i, static_cast<float>(value));
    }
}

} // namespace

bool is_convertible_float(DType dtype) noexcept {
    return dtype == DType::float64 || dtype == DType::float32 || dtype == DType::float16 || dtype == DType::bfloat16;
}

bool converts(DType stored, DType wanted) noexcept {
    return stored != wanted && is_convertible_float(stored) && is_convertible_float(wanted);
}

void convert_elements(std::byte* out, DType to, const std::byte* in, DType from, std::uint64_t count) noexcept {
    // The common cases get loops the compiler can unroll; the rest go element by element.
    if (from == DType::float32 && to == DType::float16) {
        for (std::uint64_t i = 0; i < count; ++i) {
            store<std::uint16_t>(out, i, float_to_half_bits(load<float>(in, i)));
        }
        return;
    }
    if (from == DType::float32 && to == DType::bfloat16) {
        for (std::uint64_t i = 0; i < count; ++i) {
            store<std::uint16_t>(out, i, float_to_bfloat16_bits(load<float>(in, i)));
        }
        return;
    }
    if (from != DType::float64 && to != DType::float64) {
        for (std::uint64_t i = 0; i < count; ++i) {
            write_float(out, to, i, read_float(in, from, i));
        }
        return;
    }
    for (std::uint64_t i = 0; i < count; ++i) {
        write_element(out, to, i, read_element(in, from, i));
    }
}

// IEEE binary16 from binary32 with round-to-nearest-even, by letting the FPU round: the
// value is scaled so that the 10 mantissa bits a half keeps are the top of a float's, and a
// bias added at the right exponent makes the hardware's rounding drop the rest (the method of
// the FP16 library that torch uses; it needs IEEE float arithmetic, no -ffast-math).
std::uint16_t float_to_half_bits(float value) noexcept {
    const float scale_to_inf = float_from_bits(0x77800000);  // 2^112
    const float scale_to_zero = float_from_bits(0x08800000); // 2^-110
    float base = (std::fabs(value) * scale_to_inf) * scale_to_zero;
    const std::uint32_t w = bits_of(value);
    const std::uint32_t shl1_w = w + w;
    const std::uint32_t sign = w & 0x80000000U;
    std::uint32_t bias = shl1_w & 0xFF000000U;
    if (bias < 0x71000000U) {
        bias = 0x71000000U;
    }
    base = float_from_bits((bias >> 1) + 0x07800000U) + base;
    const std::uint32_t bits = bits_of(base);
    const std::uint32_t exponent_bits = (bits >> 13) & 0x00007C00U;
    const std::uint32_t mantissa_bits = bits & 0x00000FFFU;
    const std::uint32_t nonsign = exponent_bits + mantissa_bits;
    return static_cast<std::uint16_t>((sign >> 16) | (shl1_w > 0xFF000000U ? 0x7E00U : nonsign));
}

float half_bits_to_float(std::uint16_t half) noexcept {
    const std::uint32_t w = static_cast<std::uint32_t>(half) << 16;
    const std::uint32_t sign = w & 0x80000000U;
    const std::uint32_t two_w = w + w;
    // Normal values: shift exponent and mantissa into place and rescale the exponent bias.
    const float normalized = float_from_bits((two_w >> 4) + (0xE0U << 23)) * float_from_bits(0x07800000); // 2^-112
    // Subnormal values: the mantissa as the low bits of 0.5's float, minus 0.5.
    const float denormalized = float_from_bits((two_w >> 17) | (126U << 23)) - 0.5f;
    const std::uint32_t result = sign | (two_w < (1U << 27) ? bits_of(denormalized) : bits_of(normalized));
    return float_from_bits(result);
}

std::uint16_t float_to_bfloat16_bits(float value) noexcept {
    if (std::isnan(value)) {
        return 0x7FC0; // torch's canonical bfloat16 NaN
    }
    const std::uint32_t bits = bits_of(value);
    const std::uint32_t rounding_bias = 0x7FFFU + ((bits >> 16) & 1U);
    return static_cast<std::uint16_t>((bits + rounding_bias) >> 16);
}

float bfloat16_bits_to_float(std::uint16_t bits) noexcept {
    return float_from_bits(static_cast<std::uint32_t>(bits) << 16);
}

} // namespace ringload
