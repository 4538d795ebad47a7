// bindings/cpp/src/load/storage_views.hpp
//
// Formats whose tensors view shared storages (torch zip): which storages a load reads, where
// each lies in the load's memory, and how a view's elements are gathered into C order.
//
//  storages:  [ storage 0 ............ ][ storage 3 ..... ]      (one block, 64-byte aligned)
//  tensors:     ^ a (contiguous view)     ^ c   ^ d (views of one storage: no copy)
//  gathered:  [ b in C order ][ e converted to bf16 ]            (copies, only when asked for)
#pragma once

#include "ringload/tensor_info.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringload {

struct StorageBlock {
    std::vector<std::uint32_t> storages; // Index::storages read, in file order
    std::vector<std::size_t> offset_of;  // per Index::storages entry: offset in the block
    std::size_t bytes = 0;               // the block's size
};

// The storages the tensors `wanted` (indexes into index.tensors) view, laid out in one block,
// each at 64 bytes; with `read_alignment` > 1 (a host block that O_DIRECT reads land in),
// a storage of 1 MiB or more whose file offset is 64-byte aligned (torch.save's are) sits at
// that offset modulo read_alignment instead, as aligned as before (load_layout.hpp).
StorageBlock plan_storage_block(const Index& index, const std::vector<std::size_t>& wanted,
                                std::size_t read_alignment = 1);

// Whether the view reads its elements in C order without gaps (strides of a contiguous tensor;
// a dimension of size 1 may have any stride).
bool is_c_contiguous(const TensorInfo& tensor) noexcept;

// Bytes from the view's first element to the end of its last one (0 for an empty tensor).
std::uint64_t view_extent_bytes(const TensorInfo& tensor) noexcept;

// Copies the view's elements, in C order, from `first` (its first element) into `out`.
void gather_view(std::byte* out, const std::byte* first, const TensorInfo& tensor) noexcept;

} // namespace ringload
