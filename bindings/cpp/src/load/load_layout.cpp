// bindings/cpp/src/load/load_layout.cpp
#include "load/load_layout.hpp"

#include "ringload/engine/dtype_convert.hpp"
#include "ringload/engine/stage_graph.hpp"
#include "ringload/host_arena.hpp"

namespace ringload {
namespace {

// The offset at or after `cursor` for a tensor of `info`, planned as `planned` (see the header).
std::size_t owned_offset_for(std::size_t cursor, const TensorInfo& info, const PlannedTensor& planned,
                             std::size_t read_alignment) {
    const bool in_place = read_alignment > 1 && !planned.converts &&
                          planned.byte_length >= StageGraph::in_place_min_bytes &&
                          info.data_offset_bytes % itemsize(info.dtype) == 0;
    return in_place ? offset_at_file_phase(cursor, info.data_offset_bytes, read_alignment) : cursor;
}

} // namespace

LoadLayout plan_load(const Index& index, const LoadOptions& options, std::size_t read_alignment) {
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
            planned.owned_offset = owned_offset_for(layout.owned_bytes, info, planned, read_alignment);
            layout.owned_bytes = align_tensor_offset(planned.owned_offset + planned.byte_length);
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
