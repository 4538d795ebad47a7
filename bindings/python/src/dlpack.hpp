// bindings/python/src/dlpack.hpp
//
// The engine's tensors as DLPack arrays (deserializer_binding.cpp's loads, stream_binding.cpp's
// streamed tensors): a dtype's DLPack code, and the device types.
#pragma once

#include "binding.hpp"
#include "ringload/dtype.hpp"

#include <nanobind/ndarray.h>

namespace ringload::python {

inline constexpr int dlpack_cpu = 1;
inline constexpr int dlpack_cuda = 2;

// `raw`: the bytes as flat uint8, for dtypes a framework cannot take.
nb::dlpack::dtype dlpack_dtype(DType dtype, bool raw);

} // namespace ringload::python
