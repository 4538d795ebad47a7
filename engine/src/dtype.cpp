// engine/src/dtype.cpp
#include "ringload/dtype.hpp"

#include <array>
#include <utility>

namespace ringload {
namespace {

struct DTypeRow {
    DType dtype;
    std::string_view torch_name;
    std::size_t itemsize;
};

constexpr std::array dtype_rows = {
    DTypeRow{DType::float64, "float64", 8},
    DTypeRow{DType::float32, "float32", 4},
    DTypeRow{DType::float16, "float16", 2},
    DTypeRow{DType::bfloat16, "bfloat16", 2},
    DTypeRow{DType::int64, "int64", 8},
    DTypeRow{DType::int32, "int32", 4},
    DTypeRow{DType::int16, "int16", 2},
    DTypeRow{DType::int8, "int8", 1},
    DTypeRow{DType::uint8, "uint8", 1},
    DTypeRow{DType::uint16, "uint16", 2},
    DTypeRow{DType::uint32, "uint32", 4},
    DTypeRow{DType::uint64, "uint64", 8},
    DTypeRow{DType::boolean, "bool", 1},
    DTypeRow{DType::complex32, "complex32", 4},
    DTypeRow{DType::complex64, "complex64", 8},
    DTypeRow{DType::complex128, "complex128", 16},
    DTypeRow{DType::float8_e4m3fn, "float8_e4m3fn", 1},
    DTypeRow{DType::float8_e5m2, "float8_e5m2", 1},
    DTypeRow{DType::float8_e4m3fnuz, "float8_e4m3fnuz", 1},
    DTypeRow{DType::float8_e5m2fnuz, "float8_e5m2fnuz", 1},
    DTypeRow{DType::float8_e8m0fnu, "float8_e8m0fnu", 1},
    DTypeRow{DType::float4_e2m1fn_x2, "float4_e2m1fn_x2", 1},
};
static_assert(dtype_rows.size() == static_cast<std::size_t>(last_dtype) + 1, "a row for every DType, in order");

const DTypeRow& row_of(DType dtype) noexcept {
    return dtype_rows[static_cast<std::size_t>(dtype)];
}

} // namespace

std::size_t itemsize(DType dtype) noexcept {
    return row_of(dtype).itemsize;
}

std::string_view torch_name(DType dtype) noexcept {
    return row_of(dtype).torch_name;
}

std::optional<DType> dtype_from_torch_name(std::string_view name) noexcept {
    if (name.starts_with("torch.")) {
        name.remove_prefix(6);
    }
    for (const auto& row : dtype_rows) {
        if (row.torch_name == name) {
            return row.dtype;
        }
    }
    return std::nullopt;
}

} // namespace ringload
