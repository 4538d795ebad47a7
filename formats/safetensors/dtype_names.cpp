// formats/safetensors/dtype_names.cpp
#include "formats/safetensors/dtype_names.hpp"

#include <array>
#include <limits>
#include <string>
#include <utility>

namespace ringload::safetensors {
namespace {

// The names of recent safetensors (Rust `Dtype`), except F6_E2M3 / F6_E3M2, which have no torch
// type, in the order of its enum: the writer's data order follows it (safetensors_rank). F4
// is torch's float4_e2m1fn_x2, whose shape counts bytes where safetensors' counts values
// (f4_shape.hpp).
constexpr std::array<std::pair<std::string_view, DType>, 20> names{{
    {"BOOL", DType::boolean},
    {"F4", DType::float4_e2m1fn_x2},
    {"U8", DType::uint8},
    {"I8", DType::int8},
    {"F8_E5M2", DType::float8_e5m2},
    {"F8_E4M3", DType::float8_e4m3fn},
    {"F8_E8M0", DType::float8_e8m0fnu},
    {"F8_E4M3FNUZ", DType::float8_e4m3fnuz},
    {"F8_E5M2FNUZ", DType::float8_e5m2fnuz},
    {"I16", DType::int16},
    {"U16", DType::uint16},
    {"F16", DType::float16},
    {"BF16", DType::bfloat16},
    {"I32", DType::int32},
    {"U32", DType::uint32},
    {"F32", DType::float32},
    {"C64", DType::complex64},
    {"F64", DType::float64},
    {"I64", DType::int64},
    {"U64", DType::uint64},
}};

} // namespace

std::optional<DType> dtype_from_safetensors_name(std::string_view name) noexcept {
    for (const auto& [text, dtype] : names) {
        if (text == name) {
            return dtype;
        }
    }
    return std::nullopt;
}

std::optional<std::string_view> safetensors_name(DType dtype) noexcept {
    for (const auto& [text, type] : names) {
        if (type == dtype) {
            return text;
        }
    }
    return std::nullopt;
}

Result<std::vector<std::uint64_t>> shape_from_header(DType dtype, std::vector<std::uint64_t> header_shape) {
    if (dtype != DType::float4_e2m1fn_x2) {
        return header_shape;
    }
    if (header_shape.empty() || header_shape.back() % 2 != 0) {
        return fail(errc::unsupported, "an F4 tensor whose last dimension is not an even count of values (" +
                                           std::string(header_shape.empty() ? "a scalar" : "odd") +
                                           "): torch's float4_e2m1fn_x2 holds two values a byte");
    }
    header_shape.back() /= 2;
    return header_shape;
}

Result<std::vector<std::uint64_t>> header_shape_of(DType dtype, std::vector<std::uint64_t> shape) {
    if (dtype != DType::float4_e2m1fn_x2) {
        return shape;
    }
    if (shape.empty() || shape.back() > std::numeric_limits<std::uint64_t>::max() / 2) {
        return fail(errc::invalid_argument,
                    shape.empty() ? "a float4_e2m1fn_x2 scalar has no F4 shape" : "the shape is too large for F4");
    }
    shape.back() *= 2;
    return shape;
}

int safetensors_rank(DType dtype) noexcept {
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i].second == dtype) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

} // namespace ringload::safetensors
