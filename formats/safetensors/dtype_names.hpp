// formats/safetensors/dtype_names.hpp
//
// safetensors' dtype spellings ("F16", "BF16", "F8_E4M3", ...) and ours.
#pragma once

#include "ringload/dtype.hpp"

#include <optional>
#include <string_view>

namespace ringload::safetensors {

std::optional<DType> dtype_from_safetensors_name(std::string_view name) noexcept;
// Empty for a type safetensors cannot store (complex32, complex128).
std::optional<std::string_view> safetensors_name(DType dtype) noexcept;
// The position of `dtype` in safetensors' `Dtype` enum (BOOL < U8 < I8 < F8_E5M2 < F8_E4M3 <
// F8_E8M0 < F8_E4M3FNUZ < F8_E5M2FNUZ < I16 < U16 < F16 < BF16 < I32 < U32 < F32 < C64 < F64 <
// I64 < U64); -1 for a type it cannot store.
int safetensors_rank(DType dtype) noexcept;

} // namespace ringload::safetensors
