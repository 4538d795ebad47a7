// engine/include/ringload/engine/tensor_destination.hpp
//
// Where one tensor of a load goes: the caller-given or load-owned memory for index entry
// `tensor_index`, host or device memory depending on the load. Every format's graph builder
// takes a list of these.
//
//     std::vector<TensorDestination> destinations{{0, arena + 0, std::nullopt}, {1, arena + 4096, DType::float16}};
#pragma once

#include "ringload/dtype.hpp"

#include <cstddef>
#include <optional>

namespace ringload {

struct TensorDestination {
    std::size_t tensor_index = 0; // into Index::tensors
    std::byte* data = nullptr;    // the tensor's bytes (in `dtype` when given), owned by the caller
    // Device loads only: floating data is converted to this type on the device (the CPU path
    // converts after the load).
    std::optional<DType> dtype;
};

} // namespace ringload
