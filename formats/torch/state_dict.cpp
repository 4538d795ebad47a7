// formats/torch/state_dict.cpp
#include "formats/torch/state_dict.hpp"

#include "formats/repeated_name.hpp"
#include "formats/torch/name_table.hpp"

#include <limits>

namespace ringload::torch_zip {

namespace {

std::string str(std::int64_t value) {
    return std::to_string(value);
}

bool mul_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    return __builtin_mul_overflow(a, b, &out);
}

bool add_overflows(std::uint64_t a, std::uint64_t b, std::uint64_t& out) {
    return __builtin_add_overflow(a, b, &out);
}

class Walk {
public:
    Walk(const StorageRecordLength& record_length, Index& index, const WalkLimits& limits)
        : record_length_(record_length), index_(index), limits_(limits) {}

    Result<void> visit(const Value& value, std::size_t depth) {
        if (++visits_ > limits_.visits_max) {
            return fail(errc::format_error, "torch zip: data.pkl: more than " + std::to_string(limits_.visits_max) +
                                                " values to walk (containers shared many times?)");
        }
        switch (value.kind) {
            case ValueKind::tensor:
                return add_tensor(*value.tensor, *value.tensor->storage->storage, value.tensor->storage->storage->key);
            case ValueKind::dict:
                for (const auto& [key, item] : value.entries) {
                    if (!may_hold_tensors(*item)) {
                        continue;
                    }
                    RL_TRY(component, key_component(*key));
                    RL_TRY_VOID(descend(*item, std::move(component), depth));
                }
                return {};
            case ValueKind::list:
            case ValueKind::tuple:
                for (std::size_t i = 0; i < value.items.size(); ++i) {
                    if (may_hold_tensors(*value.items[i])) {
                        RL_TRY_VOID(descend(*value.items[i], PathComponent{std::uint64_t{i}}, depth));
                    }
                }
                return {};
            default:
                return {}; // numbers, strings, dtypes, bare storages: not tensors
        }
    }

private:
    static bool may_hold_tensors(const Value& value) {
        return value.kind == ValueKind::tensor || value.kind == ValueKind::dict || value.kind == ValueKind::list ||
               value.kind == ValueKind::tuple;
    }

    Result<void> descend(const Value& value, PathComponent component, std::size_t depth) {
        if (depth + 1 > limits_.depth_max) {
            return fail(errc::format_error, "torch zip: data.pkl: containers nested deeper than " +
                                                std::to_string(limits_.depth_max) + " levels at '" +
                                                dotted_path(path_) + "' (or a container that contains itself)");
        }
        path_.push_back(std::move(component));
        auto visited = visit(value, depth + 1);
        path_.pop_back();
        return visited;
    }

    Result<PathComponent> key_component(const Value& key) const {
        switch (key.kind) {
            case ValueKind::string:
                return PathComponent{key.text};
            case ValueKind::integer:
                return PathComponent{std::to_string(key.integer)};
            case ValueKind::boolean:
                return PathComponent{std::string(key.boolean ? "True" : "False")};
            default:
                return fail(errc::unsupported,
                            "torch zip: data.pkl: tensors under a dict key that is not a string or "
                            "an int, at '" +
                                dotted_path(path_) + "': cannot name them");
        }
    }

    Error tensor_error(const std::string& name, std::string detail, errc code = errc::format_error) const {
        return fail(code, "torch zip: tensor '" + name + "': " + std::move(detail));
    }

    // The storage's index in index_.storages, added on first sight. `key` is ref.key in bytes
    // that outlive the walk (the tree's, or the pickle's).
    Result<std::uint32_t> storage_for(const std::string& name, const TensorDesc& tensor, const StorageRef& ref,
                                      std::string_view key) {
        // Typed storages count elements of their type; UntypedStorage counts bytes (§7.4).
        const DType dtype = ref.dtype.value_or(tensor.dtype);
        std::uint64_t nbytes = 0;
        if (mul_overflows(static_cast<std::uint64_t>(ref.numel), ref.dtype ? itemsize(dtype) : 1, nbytes)) {
            return tensor_error(name, "storage '" + ref.key + "' numel " + str(ref.numel) + " overflows");
        }
        const std::size_t found = storage_index_.find(key);
        if (found != NameTable::none) {
            const StorageInfo& known = index_.storages[found];
            if (known.dtype != dtype || known.byte_length != nbytes) {
                return tensor_error(name, "storage '" + ref.key + "' is used as " + ref.type_name + " with " +
                                              std::string(torch_name(dtype)) + " elements (" + std::to_string(nbytes) +
                                              " bytes) but elsewhere with " + std::string(torch_name(known.dtype)) +
                                              " elements (" + std::to_string(known.byte_length) + " bytes)");
            }
            return static_cast<std::uint32_t>(found);
        }
        auto length = record_length_(ref.key);
        if (!length) {
            return tensor_error(name, length.error().detail, length.error().code);
        }
        if (*length != nbytes) {
            return tensor_error(name, "storage '" + ref.key + "' (" + ref.type_name + ", numel " + str(ref.numel) +
                                          ") should hold " + std::to_string(nbytes) + " bytes but its record data/" +
                                          ref.key + " holds " + std::to_string(*length) +
                                          (*length < nbytes ? " (storage smaller than its persistent id says)" : ""));
        }
        if (index_.storages.size() >= std::numeric_limits<std::uint32_t>::max()) {
            return tensor_error(name, "too many storages");
        }
        StorageInfo info;
        info.key = ref.key;
        info.dtype = dtype;
        info.byte_length = nbytes;
        const auto at = static_cast<std::uint32_t>(index_.storages.size());
        index_.storages.push_back(std::move(info));
        storage_index_.insert(key, at);
        return at;
    }

public:
    // One tensor under the current path: `tensor.storage` is not used (the storage is `ref`).
    Result<void> add_tensor(const TensorDesc& tensor, const StorageRef& ref, std::string_view key) {
        // Built in place: a million TensorInfo moves were a tenth of reading the index.
        TensorInfo& info = index_.tensors.emplace_back();
        info.path = path_;
        info.name = dotted_path(path_);
        return kept_if_valid(describe_view(info, tensor, ref, key));
    }

    // A tensor of a flat dict read by scan_state_dict: the path is the key alone.
    Result<void> add_named_tensor(std::string_view name, const TensorDesc& tensor, const StorageRef& ref,
                                  std::string_view key) {
        TensorInfo& info = index_.tensors.emplace_back();
        info.name.assign(name);
        info.path.emplace_back(std::in_place_type<std::string>, name);
        return kept_if_valid(describe_view(info, tensor, ref, key));
    }

private:
    Result<void> kept_if_valid(Result<void> described) {
        if (!described) {
            index_.tensors.pop_back();
        }
        return described;
    }

    // `info` (named) takes the view's dtype, shape, strides, storage and offsets, all checked.
    Result<void> describe_view(TensorInfo& info, const TensorDesc& tensor, const StorageRef& ref,
                               std::string_view key) {
        const std::string& name = info.name; // a repeated name is found after the walk
        info.dtype = tensor.dtype;
        const std::uint64_t element_bytes = itemsize(tensor.dtype);
        if (tensor.storage_offset < 0) {
            return tensor_error(name, "negative storage offset " + str(tensor.storage_offset));
        }
        info.storage_offset = static_cast<std::uint64_t>(tensor.storage_offset);
        std::uint64_t numel = 1;
        std::uint64_t last = info.storage_offset; // element index of the last element when numel > 0
        info.shape.reserve(tensor.shape.size());
        info.strides.reserve(tensor.shape.size());
        for (std::size_t k = 0; k < tensor.shape.size(); ++k) {
            if (tensor.shape[k] < 0) {
                return tensor_error(name, "negative size " + str(tensor.shape[k]) + " in dimension " + str(k));
            }
            if (tensor.strides[k] < 0) {
                return tensor_error(name, "negative stride " + str(tensor.strides[k]) + " in dimension " + str(k) +
                                              " (torch never writes these)");
            }
            const auto size = static_cast<std::uint64_t>(tensor.shape[k]);
            const auto stride = static_cast<std::uint64_t>(tensor.strides[k]);
            info.shape.push_back(size);
            info.strides.push_back(stride);
            if (mul_overflows(numel, size, numel)) {
                return tensor_error(name, "numel overflows 64 bits");
            }
        }
        if (numel > 0) {
            for (std::size_t k = 0; k < info.shape.size(); ++k) {
                std::uint64_t reach = 0;
                if (mul_overflows(info.shape[k] - 1, info.strides[k], reach) || add_overflows(last, reach, last)) {
                    return tensor_error(name, "view extent overflows 64 bits");
                }
            }
        }
        if (mul_overflows(numel, element_bytes, info.byte_length)) {
            return tensor_error(name, "byte length overflows 64 bits");
        }
        RL_TRY(storage_at, storage_for(name, tensor, ref, key));
        const StorageInfo& storage = index_.storages[storage_at];
        const std::uint64_t storage_numel = storage.byte_length / element_bytes;
        if (numel > 0) {
            if (last >= storage_numel) {
                return tensor_error(name, "view reads elements " + std::to_string(info.storage_offset) + ".." +
                                              std::to_string(last) + " of storage '" + storage.key + "', which has " +
                                              std::to_string(storage_numel) + " " +
                                              std::string(torch_name(tensor.dtype)) + " elements (view out of bounds)");
            }
            info.data_offset_bytes = info.storage_offset * element_bytes;
            info.data_length_bytes = (last + 1 - info.storage_offset) * element_bytes;
        } else {
            if (info.storage_offset > storage_numel) {
                return tensor_error(name, "empty view at element " + std::to_string(info.storage_offset) +
                                              " past the end of storage '" + storage.key + "' (" +
                                              std::to_string(storage_numel) + " elements)");
            }
            info.data_offset_bytes = info.storage_offset * element_bytes;
            info.data_length_bytes = 0;
        }
        info.record_offset_bytes = info.data_offset_bytes;
        info.storage_index = storage_at;
        return {};
    }

    const StorageRecordLength& record_length_;
    Index& index_;
    WalkLimits limits_;
    std::vector<PathComponent> path_;
    NameTable storage_index_; // storage key -> index_.storages position
    std::size_t visits_ = 0;
};

// Each tensor name once: one rule for both ways of reading the pickle. The scan checks the
// names where they lie side by side in the pickle, before any TensorInfo exists (reaching each
// through its TensorInfo's heap block took twice the time at a million tensors).
template <class NameOf>
Result<void> refuse_repeated_names(std::size_t count, NameOf name_of) {
    if (const auto again = find_repeated_name(count, name_of)) {
        return fail(errc::format_error,
                    "torch zip: tensor '" + std::string(name_of(*again)) + "': the name appears twice");
    }
    return {};
}

} // namespace

Result<void> collect_tensors(const Value& root, const StorageRecordLength& record_length, Index& index,
                             const WalkLimits& limits) {
    Walk walk(record_length, index, limits);
    const std::size_t first = index.tensors.size();
    RL_TRY_VOID(walk.visit(root, 0));
    return refuse_repeated_names(index.tensors.size() - first,
                                 [&](std::size_t i) { return std::string_view(index.tensors[first + i].name); });
}

Result<void> collect_scanned_tensors(const ScannedStateDict& scanned, const StorageRecordLength& record_length,
                                     Index& index) {
    RL_TRY_VOID(refuse_repeated_names(scanned.tensors.size(), [&](std::size_t i) { return scanned.tensors[i].name; }));
    const WalkLimits limits;
    Walk walk(record_length, index, limits);
    const std::size_t first = index.tensors.size();
    index.tensors.reserve(first + scanned.tensors.size());
    index.storages.reserve(index.storages.size() + scanned.tensors.size()); // torch: mostly one each
    // One TensorDesc and StorageRef, refilled: their vectors and strings keep their capacity.
    TensorDesc desc;
    StorageRef ref;
    for (const ScannedTensor& tensor : scanned.tensors) {
        const GlobalLookup& type = scanned.globals[tensor.storage_type];
        ref.key.assign(tensor.storage_key);
        ref.location.assign(tensor.location);
        ref.type_name.assign(type.qualified_name);
        ref.dtype = type.symbol.dtype;
        ref.numel = tensor.numel;
        desc.dtype = *type.symbol.dtype; // _rebuild_tensor_v2: the storage's type (the scan checked it has one)
        desc.storage_offset = tensor.storage_offset;
        const auto dims = scanned.dims.begin() + tensor.dims_at;
        desc.shape.assign(dims, dims + tensor.rank);
        desc.strides.assign(dims + tensor.rank, dims + 2 * tensor.rank);
        desc.requires_grad = tensor.requires_grad;
        RL_TRY_VOID(walk.add_named_tensor(tensor.name, desc, ref, tensor.storage_key));
    }
    return {};
}

} // namespace ringload::torch_zip
