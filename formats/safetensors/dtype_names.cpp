// formats/safetensors/dtype_names.cpp
#include "formats/safetensors/dtype_names.hpp"

#include <array>
#include <utility>

namespace ringload::safetensors {
namespace {

// The names of recent safetensors (Rust `Dtype`), except F4/F6, which have no torch type, in
// the order of its enum: the writer's data order follows it (safetensors_rank).
constexpr std::array<std::pair<std::string_view, DType>, 19> names{{
    {"BOOL", DType::boolean},
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

int safetensors_rank(DType dtype) noexcept {
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (names[i].second == dtype) {
            return static_cast<int>(i);
        }
    }
    return -1;
}

} // namespace ringload::safetensors
