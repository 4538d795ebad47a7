// formats/torch/state_dict_scan.hpp
//
// The fast path for the pickle torch.save writes for a flat state dict: a dict (or an
// OrderedDict, with the {'_metadata': {module: {'version': n}}} that module.state_dict() adds)
// of name -> _rebuild_tensor_v2(storage, offset, size, stride, requires_grad, OrderedDict()).
// It reads that opcode sequence straight into a flat list, with no Value tree (at a million
// tensors the tree's nine Values and ten allocations per tensor were most of `ringload info`'s
// time), and gives up (nullopt) at the first byte that is anything else: then the general
// machine (pickle_machine.hpp) reads the pickle from the start, and its result and its errors
// are the only ones a caller sees. So the fast path accepts a subset of what the machine
// accepts and must describe it identically: globals go through the same allowlist, and
// anything it would have to check (a negative numel, an untyped storage, a rank over the
// limit, sizes and strides of different lengths, a memo slot never stored) makes it give up
// rather than decide.
#pragma once

#include "formats/torch/pickle_machine.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace ringload::torch_zip {

struct ScannedTensor {
    std::string_view name; // views into the pickle
    std::string_view storage_key;
    std::string_view location;
    std::uint32_t storage_type = 0; // its storage_type global: position in ScannedStateDict::globals
    std::int64_t numel = 0;
    std::int64_t storage_offset = 0;
    std::uint32_t dims_at = 0; // shape at dims[dims_at, +rank), strides right after
    std::uint32_t rank = 0;
    bool requires_grad = false;
};

struct ScannedStateDict {
    std::vector<ScannedTensor> tensors; // in the dict's insertion order
    std::vector<std::int64_t> dims;
    std::vector<GlobalLookup> globals; // the allowed globals the pickle named, each once per GLOBAL
};

// nullopt: not (exactly) that shape; read it with unpickle_weights_only.
std::optional<ScannedStateDict> scan_state_dict(std::span<const std::byte> pickle, const PickleLimits& limits = {});

} // namespace ringload::torch_zip
