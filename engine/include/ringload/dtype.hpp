// engine/include/ringload/dtype.hpp
//
// The element types a tensor can have, named as torch names them (without "torch."). Formats
// map their own spellings (numpy strings, safetensors names, torch storage types) onto these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ringload {

enum class DType : std::uint8_t {
    float64,
    float32,
    float16,
    bfloat16,
    int64,
    int32,
    int16,
    int8,
    uint8,
    uint16,
    uint32,
    uint64,
    boolean,
    complex32,
    complex64,
    complex128,
    float8_e4m3fn,
    float8_e5m2,
    float8_e4m3fnuz,
    float8_e5m2fnuz,
    float8_e8m0fnu,
    // Two 4-bit floats (e2m1) a byte, as torch's float4_e2m1fn_x2: an element is the byte, and
    // the last dimension counts bytes (safetensors' F4 counts values: twice as many).
    float4_e2m1fn_x2,
};
// The last DType: the values run from DType::float64 (0) to it.
inline constexpr DType last_dtype = DType::float4_e2m1fn_x2;

// Bytes per element.
std::size_t itemsize(DType dtype) noexcept;

// torch's name without the "torch." prefix: "float32", "bfloat16", "bool", ...
std::string_view torch_name(DType dtype) noexcept;

// The inverse of torch_name; accepts an optional "torch." prefix.
std::optional<DType> dtype_from_torch_name(std::string_view name) noexcept;

} // namespace ringload
