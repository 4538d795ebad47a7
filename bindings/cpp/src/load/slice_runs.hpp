// bindings/cpp/src/load/slice_runs.hpp
//
// Where a slice's elements are in a tensor's bytes: runs of consecutive elements, each a
// stretch of the source that goes to one place in the slice's C-order output. A row range of a
// C-contiguous tensor is one run; a column slice is one run per row; a view with strides and a
// storage offset (torch zip) steps through its storage the same way.
//
//   tensor 4x6, C order, slice [1:3, 2:5]:    source elements  8..10 -> output 0..2
//                                              source elements 14..16 -> output 3..5
//
//     auto runs = slice_element_runs(shape, c_strides(shape), 0, ranges);
//
// Thread: plain functions of their arguments.
#pragma once

#include "ringload/error.hpp"
#include "ringload/ringload.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ringload {

// `count` elements from element `source_element` of the storage (or tensor) to element
// `target_element` of the slice's output.
struct ElementRun {
    std::uint64_t source_element = 0;
    std::uint64_t target_element = 0;
    std::uint64_t count = 0;
    bool operator==(const ElementRun&) const = default;
};

// The element strides of a C-contiguous tensor of `shape`.
std::vector<std::uint64_t> c_strides(std::span<const std::uint64_t> shape);

// The slice's shape: stop - start per dimension.
std::vector<std::uint64_t> slice_shape(std::span<const SliceRange> ranges);

// One range per dimension, each start <= stop <= extent; the error names `what` (the tensor)
// and the dimension.
Result<void> check_slice(std::span<const std::uint64_t> shape, std::span<const SliceRange> ranges,
                         const std::string& what);

// The slice's elements as runs, in output order, touching runs merged. Element i of the view
// (an index per dimension) is storage element storage_offset + sum(i_k * strides[k]). Empty
// for a zero-size slice; one run of one element for a 0-d tensor. Ranges must be checked.
std::vector<ElementRun> slice_element_runs(std::span<const std::uint64_t> strides, std::uint64_t storage_offset,
                                           std::span<const SliceRange> ranges);

// Copies the runs' elements (of `itemsize` bytes) from `source` (storage element 0) to `out`.
void copy_runs(std::byte* out, const std::byte* source, std::span<const ElementRun> runs, std::size_t itemsize);

} // namespace ringload
