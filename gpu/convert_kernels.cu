// gpu/convert_kernels.cu
//
// float64/32/16 and bfloat16 among each other, rounding to nearest even, as the CPU path does.
#include "convert_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace ringload::gpu {
namespace {

// Values pass through float, never double, unless one side is float64: as on the CPU path
// (engine/src/dtype_convert.cpp) and in torch's casts.
__device__ float widen(float value) {
    return value;
}
__device__ double widen(double value) {
    return value;
}
__device__ float widen(__half value) {
    return __half2float(value);
}
__device__ float widen(__nv_bfloat16 value) {
    return __bfloat162float(value);
}

template <class T>
__device__ T narrow(double value);
template <class T>
__device__ T narrow(float value);
template <>
__device__ double narrow(double value) {
    return value;
}
template <>
__device__ double narrow(float value) {
    return value;
}
template <>
__device__ float narrow(double value) {
    return static_cast<float>(value);
}
template <>
__device__ float narrow(float value) {
    return value;
}
// NaNs get the CPU path's encodings (CUDA's own are 0x7FFF for both): a half NaN keeps its
// sign as 0x7E00, a bfloat16 NaN is 0x7FC0.
template <>
__device__ __half narrow(float value) {
    if (isnan(value)) {
        return __ushort_as_half(static_cast<unsigned short>(signbit(value) ? 0xFE00 : 0x7E00));
    }
    return __float2half_rn(value);
}
template <>
__device__ __half narrow(double value) {
    return narrow<__half>(static_cast<float>(value));
}
template <>
__device__ __nv_bfloat16 narrow(float value) {
    if (isnan(value)) {
        return __ushort_as_bfloat16(static_cast<unsigned short>(0x7FC0));
    }
    return __float2bfloat16_rn(value);
}
template <>
__device__ __nv_bfloat16 narrow(double value) {
    return narrow<__nv_bfloat16>(static_cast<float>(value));
}

template <class From, class To>
__global__ void convert_kernel(To* out, const From* in, std::uint64_t count) {
    const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
    for (std::uint64_t i = static_cast<std::uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
        out[i] = narrow<To>(widen(in[i]));
    }
}

template <class From, class To>
cudaError_t launch(void* out, const void* in, std::uint64_t count, cudaStream_t stream) {
    constexpr unsigned threads = 256;
    const std::uint64_t wanted = (count + threads - 1) / threads;
    const unsigned blocks = static_cast<unsigned>(wanted < 65535 ? (wanted == 0 ? 1 : wanted) : 65535);
    (void)cudaGetLastError(); // a stale error from an earlier call on this thread is not ours
    convert_kernel<From, To>
        <<<blocks, threads, 0, stream>>>(static_cast<To*>(out), static_cast<const From*>(in), count);
    return cudaGetLastError();
}

template <class From>
cudaError_t launch_to(void* out, FloatKind to, const void* in, std::uint64_t count, cudaStream_t stream) {
    switch (to) {
        case FloatKind::float64:
            return launch<From, double>(out, in, count, stream);
        case FloatKind::float32:
            return launch<From, float>(out, in, count, stream);
        case FloatKind::float16:
            return launch<From, __half>(out, in, count, stream);
        case FloatKind::bfloat16:
            return launch<From, __nv_bfloat16>(out, in, count, stream);
    }
    return cudaErrorInvalidValue;
}

} // namespace

int launch_convert(void* out, FloatKind to, const void* in, FloatKind from, std::uint64_t count, cudaStream_t stream) {
    if (count == 0) {
        return cudaSuccess;
    }
    switch (from) {
        case FloatKind::float64:
            return launch_to<double>(out, to, in, count, stream);
        case FloatKind::float32:
            return launch_to<float>(out, to, in, count, stream);
        case FloatKind::float16:
            return launch_to<__half>(out, to, in, count, stream);
        case FloatKind::bfloat16:
            return launch_to<__nv_bfloat16>(out, to, in, count, stream);
    }
    return cudaErrorInvalidValue;
}

} // namespace ringload::gpu
