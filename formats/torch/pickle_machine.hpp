// formats/torch/pickle_machine.hpp
//
// A pickle interpreter that treats data.pkl as data, never as a program (torch-zip-format.md
// §7-§8): it knows the protocol-2 opcodes torch.save emits, resolves GLOBALs against an
// allowlist to inert symbols, and builds a small value tree. Tensors become descriptors
// (storage reference, dtype, offset, shape, strides); nothing is imported or called.
//
//     auto tree = unpickle_weights_only(pickle_bytes);   // Result<PickleTree>
//     const Value& root = *tree->root;                    // usually a dict of tensors
//
// Hostile input gives an error, never a crash or a hang: every length is checked against the
// bytes left, stack pops never cross a mark, memo slots must exist, integers wider than 64
// bits and protocol-4 opcodes are refused. Values live in an arena owned by the tree, so
// cycles (a list appended to itself through the memo) cost nothing to free; the walk in
// state_dict.hpp bounds its own depth.
#pragma once

#include "formats/torch/global_allowlist.hpp"
#include "ringload/dtype.hpp"
#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ringload::torch_zip {

enum class ValueKind : std::uint8_t {
    none,
    boolean,
    integer,
    floating,
    string,
    bytes,
    tuple,
    list,
    dict,
    set,
    global,  // an allowed symbol (GlobalSymbol); only REDUCE and BINPERSID use it
    storage, // what BINPERSID gave: ('storage', type, key, location, numel)
    tensor,
};

struct Value;

// BINPERSID's storage reference. Several references may name one key.
struct StorageRef {
    std::string key;
    std::string location;
    std::string type_name;      // "torch.FloatStorage", for messages
    std::optional<DType> dtype; // nullopt for torch.UntypedStorage (numel is then bytes)
    std::int64_t numel = 0;
};

// A tensor as a rebuild function described it. Numbers are kept as the pickle gave them: the
// state-dict walk checks them, where it can name the tensor.
struct TensorDesc {
    const Value* storage = nullptr; // kind storage
    DType dtype = DType::float32;
    std::int64_t storage_offset = 0;
    std::vector<std::int64_t> shape;
    std::vector<std::int64_t> strides;
    bool requires_grad = false;
    bool is_parameter = false;
    GlobalKind rebuild = GlobalKind::rebuild_tensor_v2;
};

struct Value {
    ValueKind kind = ValueKind::none;
    bool boolean = false;
    std::int64_t integer = 0;
    double floating = 0;
    std::string text;                               // string, bytes; a global's qualified name
    std::vector<Value*> items;                      // tuple, list, set
    std::vector<std::pair<Value*, Value*>> entries; // dict, in insertion order
    bool ordered = false;                           // dict made by collections.OrderedDict
    GlobalSymbol symbol;                            // global
    // Only storages and tensors have these: held apart, a Value is 128 bytes, not 300 (a
    // million tensors' pickle makes some twenty million Values).
    std::unique_ptr<StorageRef> storage; // storage
    std::unique_ptr<TensorDesc> tensor;  // tensor
};

// Every Value of a tree, in chunks of 4096 (a deque holds four 128-byte Values per block: a
// million tensors made millions of blocks to allocate and free). Addresses are stable.
class ValueArena {
public:
    Value& make() {
        if (used_ == chunk_values) {
            chunks_.push_back(std::make_unique<Value[]>(chunk_values));
            used_ = 0;
        }
        return chunks_.back()[used_++];
    }

private:
    static constexpr std::size_t chunk_values = 4096;
    std::vector<std::unique_ptr<Value[]>> chunks_;
    std::size_t used_ = chunk_values;
};

struct PickleTree {
    std::unique_ptr<ValueArena> values; // owns every Value
    const Value* root = nullptr;
};

struct PickleLimits {
    std::size_t pickle_bytes_max = std::size_t{1} << 30;
    std::size_t mark_depth_max = 4096;
    std::size_t tensor_rank_max = 64;
};

// Errors start with "torch zip: data.pkl: " and name the opcode and its byte position; a
// refused global is named ("forbidden global 'os.system' ...").
Result<PickleTree> unpickle_weights_only(std::span<const std::byte> pickle, const PickleLimits& limits = {});

} // namespace ringload::torch_zip
