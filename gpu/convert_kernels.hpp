// gpu/convert_kernels.hpp
//
// The dtype conversion kernels (convert_kernels.cu), behind a plain C++ interface so that
// only that file is compiled by nvcc.
#pragma once

#include <cstdint>

typedef struct CUstream_st* cudaStream_t;

namespace ringload::gpu {

enum class FloatKind : int { float64, float32, float16, bfloat16 };

// Queues the conversion of `count` elements on `stream`; returns a cudaError_t as int.
int launch_convert(void* out, FloatKind to, const void* in, FloatKind from, std::uint64_t count, cudaStream_t stream);

} // namespace ringload::gpu
