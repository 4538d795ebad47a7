// bindings/python/src/dlpack.hpp
//
// The engine's tensors as DLPack arrays (deserializer_binding.cpp's loads, stream_binding.cpp's
// streamed tensors): a dtype's DLPack code, the device types, and one tensor as an array.
#pragma once

#include "binding.hpp"
#include "ringload/dtype.hpp"

#include <nanobind/ndarray.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ringload::python {

inline constexpr int dlpack_cpu = 1;
inline constexpr int dlpack_cuda = 2;

// `raw`: the bytes as flat uint8, for dtypes a framework cannot take.
nb::dlpack::dtype dlpack_dtype(DType dtype, bool raw);

// A loaded tensor as an array over its memory on `device` ("cpu" or "cuda:N"), kept alive by
// `owner`; a strided view (torch zip, loaded with LoadOptions::contiguous false) with its
// element steps. raw: its bytes as flat uint8 (the whole span, for a strided view too).
template <class Framework>
nb::ndarray<Framework> tensor_array(const LoadedTensor& tensor, nb::capsule owner, const std::string& device,
                                    bool raw) {
    std::vector<std::size_t> shape(tensor.info.shape.begin(), tensor.info.shape.end());
    std::vector<std::int64_t> strides(tensor.info.strides.begin(), tensor.info.strides.end());
    if (raw) {
        shape = {tensor.bytes.size()};
        strides.clear();
    }
    const bool on_gpu = device != "cpu";
    const int device_id = on_gpu ? std::stoi(device.substr(5)) : 0;
    return nb::ndarray<Framework>(tensor.bytes.data(), shape.size(), shape.data(), std::move(owner),
                                  strides.empty() ? nullptr : strides.data(), dlpack_dtype(tensor.info.dtype, raw),
                                  on_gpu ? dlpack_cuda : dlpack_cpu, device_id);
}

// A strided view's element steps, or None for a tensor in C order.
inline nb::object strides_of(const LoadedTensor& tensor) {
    if (tensor.info.strides.empty()) {
        return nb::none();
    }
    nb::list steps;
    for (auto step : tensor.info.strides) {
        steps.append(step);
    }
    return nb::tuple(steps);
}

} // namespace ringload::python
