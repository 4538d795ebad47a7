// formats/safetensors/dtype_names.hpp
//
// safetensors' dtype spellings ("F16", "BF16", "F8_E4M3", ...) and ours.
#pragma once

#include "ringload/dtype.hpp"

#include <optional>
#include <string_view>

namespace ringload::safetensors {

std::optional<DType> dtype_from_safetensors_name(std::string_view name) noexcept;
// Empty for a type safetensors cannot store (complex32, complex128, the fnuz float8s).
std::optional<std::string_view> safetensors_name(DType dtype) noexcept;

} // namespace ringload::safetensors
