// formats/torch_writer/pickle_writer.hpp
//
// data.pkl of a torch.save'd state dict, in protocol 2, byte for byte as Python's pickler
// writes it for the same object in torch 1.13 (torch-zip-format.md §7, §13.3): every string,
// non-empty tuple, global and reduced object memoized in turn, repeated globals and the shared
// 'storage' / 'cpu' strings fetched from the memo.
//
//     OrderedDict([(name, _rebuild_tensor_v2(persistent ('storage', torch.FloatStorage, '0', 'cpu', numel),
//                                           0, size, stride, False, OrderedDict())), ...])
//
// Each tensor gets its own storage; keys "0", "1", ... in the order the pickle meets them, so
// that records written as data/0, data/1, ... are in first-appearance order (what torch >= 2.7
// needs to compute offsets). Names: a path of one string is the key; a longer path nests
// containers, string components as dicts (the top one an OrderedDict, as state_dict() gives),
// integer components as lists (indexes must be exactly 0..n-1).
//
// A meta tensor (no data) is _rebuild_meta_tensor_no_storage(dtype, shape, stride, False), as
// torch 1.13 pickles one; its weights-only loader reads it for the dtypes it allowlists
// (float16/32/64, int8/16/32/64, complex32/64/128), newer torch for all.
//
// dtypes with a legacy storage class (float, int, bool, complex64/128) use _rebuild_tensor_v2,
// which every torch since 1.6 reads. The others (float8_*, uint16/32/64, complex32) have no
// such class: they use _rebuild_tensor_v3 with torch.storage.UntypedStorage (numel in bytes) and a
// dtype global, which only torch >= 2.1 reads (torch 1.13 refuses the file).
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/error.hpp"
#include "ringload/tensor_info.hpp"

#include <cstddef>
#include <span>
#include <vector>

namespace ringload::torch_writer {

struct PickledTensor {
    std::vector<PathComponent> path;
    DType dtype = DType::float32;
    std::vector<std::uint64_t> shape; // C-contiguous; empty for 0-d
    bool is_meta = false;             // shape and dtype only, no storage
};

struct StateDictPickle {
    std::vector<std::byte> bytes;
    // storage_tensors[k]: the tensor (index into the input) whose storage has key k.
    std::vector<std::size_t> storage_tensors;
    bool needs_torch_2_1 = false; // some tensor uses _rebuild_tensor_v3
    // A meta tensor of a dtype torch 1.13's weights-only loader does not allowlist.
    bool needs_newer_than_1_13 = false;
};

// Fails on a name that is not valid UTF-8, a duplicate path, a path that is also a prefix of
// another, or a container whose keys mix strings and list indexes.
Result<StateDictPickle> pickle_state_dict(std::span<const PickledTensor> tensors);

// torch's contiguous strides: stride[k] = stride[k+1] * max(shape[k+1], 1).
std::vector<std::uint64_t> contiguous_strides(const std::vector<std::uint64_t>& shape);

// A tensor's path for messages: keys joined with ".", list indexes as "[3]".
std::string path_text(const std::vector<PathComponent>& path);

} // namespace ringload::torch_writer
