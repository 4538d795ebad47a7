// gpu/convert_kernels.cu
//
// float64/32/16 and bfloat16 among each other, rounding to nearest even. A 16-bit target is
// reached through float32, as torch's casts do.
#include "convert_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

namespace ringload::gpu {
namespace {

template <class T>
__device__ double widen(T value);
template <>
__device__ double widen(double value) {
    return value;
}
template <>
__device__ double widen(float value) {
    return value;
}
template <>
__device__ double widen(__half value) {
    return __half2float(value);
}
template <>
__device__ double widen(__nv_bfloat16 value) {
    return __bfloat162float(value);
}

template <class T>
__device__ T narrow(double value);
template <>
__device__ double narrow(double value) {
    return value;
}
template <>
__device__ float narrow(double value) {
    return static_cast<float>(value);
}
template <>
__device__ __half narrow(double value) {
    return __float2half_rn(static_cast<float>(value));
}
template <>
__device__ __nv_bfloat16 narrow(double value) {
    return __float2bfloat16_rn(static_cast<float>(value));
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
