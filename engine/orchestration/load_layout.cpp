// engine/orchestration/load_layout.cpp
#include "load_layout.hpp"

#include "ringload/engine/dtype_convert.hpp"
#include "ringload/host_arena.hpp"

namespace ringload {

LoadLayout plan_load(const Index& index, const LoadOptions& options) {
    LoadLayout layout;
    const bool listed = !options.tensors.empty();
    const std::size_t count = listed ? options.tensors.size() : index.tensors.size();
    for (std::size_t k = 0; k < count; ++k) {
        const std::size_t i = listed ? options.tensors[k] : k;
        const TensorInfo& info = index.tensors[i];
        if (!listed && options.filter && !options.filter(info)) {
            continue;
        }
        PlannedTensor planned;
        planned.index = i;
        planned.dtype = info.dtype;
        planned.byte_length = info.byte_length;
        if (options.dtype && converts(info.dtype, *options.dtype)) {
            planned.converts = true;
            planned.dtype = *options.dtype;
            planned.byte_length = info.numel() * itemsize(planned.dtype);
            layout.raw_bytes = align_tensor_offset(layout.raw_bytes + info.byte_length);
        }
        if (options.destination) {
            planned.given = options.destination(loaded_info(info, planned));
        }
        if (planned.given == nullptr) {
            planned.owned_offset = layout.owned_bytes;
            layout.owned_bytes = align_tensor_offset(layout.owned_bytes + planned.byte_length);
        }
        layout.tensors.push_back(planned);
    }
    return layout;
}

TensorInfo loaded_info(const TensorInfo& stored, const PlannedTensor& planned) {
    TensorInfo info = stored;
    info.dtype = planned.dtype;
    info.byte_length = planned.byte_length;
    return info;
}

} // namespace ringload
