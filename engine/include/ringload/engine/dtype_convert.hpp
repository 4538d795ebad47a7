// engine/include/ringload/engine/dtype_convert.hpp
//
// Element type conversion on load (tensorizer's `dtype=`): floating tensors (float64, float32,
// float16, bfloat16) become the asked type, rounding to nearest even as torch's `.to()` does;
// other tensors keep the type they were stored with. The GPU path does the same with a kernel
// (gpu/convert_kernels.cu); this is the CPU path's, run on the worker pool.
//
//     if (converts(info.dtype, wanted)) { convert_elements(out, wanted, in, info.dtype, info.numel()); }
//
// Thread: any.
#pragma once

#include "ringload/dtype.hpp"

#include <cstddef>
#include <cstdint>

namespace ringload {

// float64, float32, float16 and bfloat16.
bool is_convertible_float(DType dtype) noexcept;

// Whether a load asked for `wanted` turns a tensor stored as `stored` into another type.
bool converts(DType stored, DType wanted) noexcept;

// `count` elements of type `from` at `in` into type `to` at `out` (no overlap).
void convert_elements(std::byte* out, DType to, const std::byte* in, DType from, std::uint64_t count) noexcept;

// Single values, for the kernels' tests and for callers: IEEE binary16 and bfloat16 bits.
std::uint16_t float_to_half_bits(float value) noexcept;
float half_bits_to_float(std::uint16_t bits) noexcept;
std::uint16_t float_to_bfloat16_bits(float value) noexcept;
float bfloat16_bits_to_float(std::uint16_t bits) noexcept;

} // namespace ringload
