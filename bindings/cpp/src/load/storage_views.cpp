// bindings/cpp/src/load/storage_views.cpp
#include "load/storage_views.hpp"

#include "load/load_layout.hpp"
#include "ringload/engine/stage_graph.hpp"
#include "ringload/host_arena.hpp"

#include <algorithm>
#include <cstring>

namespace ringload {

StorageBlock plan_storage_block(const Index& index, const std::vector<std::size_t>& wanted,
                                std::size_t read_alignment) {
    StorageBlock block;
    std::vector<bool> needed(index.storages.size(), false);
    for (std::size_t k : wanted) {
        if (index.tensors[k].storage_index) {
            needed[*index.tensors[k].storage_index] = true;
        }
    }
    block.offset_of.assign(index.storages.size(), 0);
    for (std::uint32_t s = 0; s < index.storages.size(); ++s) {
        if (needed[s]) {
            block.storages.push_back(s);
        }
    }
    // File order: the reads then stream front to back.
    std::sort(block.storages.begin(), block.storages.end(), [&](std::uint32_t a, std::uint32_t b) {
        return index.storages[a].data_offset_bytes < index.storages[b].data_offset_bytes;
    });
    for (std::uint32_t s : block.storages) {
        const StorageInfo& storage = index.storages[s];
        const bool in_place = read_alignment > 1 && storage.byte_length >= StageGraph::in_place_min_bytes &&
                              storage.data_offset_bytes % HostArena::tensor_alignment_bytes == 0;
        const std::size_t offset =
            in_place ? offset_at_file_phase(block.bytes, storage.data_offset_bytes, read_alignment) : block.bytes;
        block.offset_of[s] = offset;
        block.bytes = align_tensor_offset(offset + storage.byte_length);
    }
    return block;
}

bool is_c_contiguous(const TensorInfo& tensor) noexcept {
    const bool empty = std::find(tensor.shape.begin(), tensor.shape.end(), 0) != tensor.shape.end();
    if (tensor.strides.empty() || empty) {
        return true; // no elements: any strides read nothing
    }
    std::uint64_t expected = 1;
    for (std::size_t d = tensor.shape.size(); d-- > 0;) {
        if (tensor.shape[d] != 1 && tensor.strides[d] != expected) {
            return false;
        }
        expected *= tensor.shape[d];
    }
    return true;
}

std::uint64_t view_extent_bytes(const TensorInfo& tensor) noexcept {
    std::uint64_t last = 0;
    for (std::size_t d = 0; d < tensor.shape.size(); ++d) {
        if (tensor.shape[d] == 0) {
            return 0;
        }
        const std::uint64_t stride = tensor.strides.empty() ? 0 : tensor.strides[d];
        last += (tensor.shape[d] - 1) * stride;
    }
    if (tensor.strides.empty()) {
        return tensor.byte_length;
    }
    return (last + 1) * itemsize(tensor.dtype);
}

void gather_view(std::byte* out, const std::byte* first, const TensorInfo& tensor) noexcept {
    const std::size_t item = itemsize(tensor.dtype);
    const std::size_t rank = tensor.shape.size();
    if (is_c_contiguous(tensor)) { // also every empty tensor: nothing to copy
        if (tensor.byte_length > 0) {
            std::memcpy(out, first, tensor.byte_length);
        }
        return;
    }
    // An odometer over the indexes; the innermost dimension is copied in one loop.
    std::vector<std::uint64_t> at(rank, 0);
    const std::uint64_t inner = tensor.shape[rank - 1];
    const std::uint64_t inner_stride = tensor.strides[rank - 1] * item;
    for (;;) {
        std::uint64_t element = 0;
        for (std::size_t d = 0; d + 1 < rank; ++d) {
            element += at[d] * tensor.strides[d];
        }
        const std::byte* from = first + element * item;
        for (std::uint64_t i = 0; i < inner; ++i) {
            std::memcpy(out, from + i * inner_stride, item);
            out += item;
        }
        std::size_t d = rank - 1;
        for (;;) {
            if (d == 0) {
                return;
            }
            --d;
            if (++at[d] < tensor.shape[d]) {
                break;
            }
            at[d] = 0;
        }
    }
}

} // namespace ringload
