// formats/safetensors/dtype_names.hpp
//
// safetensors' dtype spellings ("F16", "BF16", "F8_E4M3", ...) and ours.
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/error.hpp"

#include <optional>
#include <string_view>
#include <vector>

namespace ringload::safetensors {

std::optional<DType> dtype_from_safetensors_name(std::string_view name) noexcept;
// Empty for a type safetensors cannot store (complex32, complex128).
std::optional<std::string_view> safetensors_name(DType dtype) noexcept;
// The position of `dtype` in safetensors' `Dtype` enum (BOOL < F4 < U8 < I8 < F8_E5M2 < F8_E4M3 <
// F8_E8M0 < F8_E4M3FNUZ < F8_E5M2FNUZ < I16 < U16 < F16 < BF16 < I32 < U32 < F32 < C64 < F64 <
// I64 < U64); -1 for a type it cannot store.
int safetensors_rank(DType dtype) noexcept;

// A header's shape counts values; ours counts elements of the DType. They differ for F4 only,
// where torch's float4_e2m1fn_x2 holds two values a byte: the header's last dimension is twice
// ours. Ours from a header's (refused: an F4 scalar, or an odd last dimension, which no torch
// tensor has), and a header's from ours (refused: a scalar; a last dimension over 2^63).
Result<std::vector<std::uint64_t>> shape_from_header(DType dtype, std::vector<std::uint64_t> header_shape);
Result<std::vector<std::uint64_t>> header_shape_of(DType dtype, std::vector<std::uint64_t> shape);

} // namespace ringload::safetensors
