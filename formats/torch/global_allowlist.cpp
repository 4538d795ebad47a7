// formats/torch/global_allowlist.cpp
#include "formats/torch/global_allowlist.hpp"

#include <array>
#include <utility>

namespace ringload::torch_zip {

namespace {

struct StorageClass {
    std::string_view name;
    DType dtype;
};

// §7.5: the legacy typed-storage classes _rebuild_tensor_v2 uses.
constexpr std::array<StorageClass, 12> storage_classes = {{
    {"DoubleStorage", DType::float64},
    {"FloatStorage", DType::float32},
    {"HalfStorage", DType::float16},
    {"BFloat16Storage", DType::bfloat16},
    {"LongStorage", DType::int64},
    {"IntStorage", DType::int32},
    {"ShortStorage", DType::int16},
    {"CharStorage", DType::int8},
    {"ByteStorage", DType::uint8},
    {"BoolStorage", DType::boolean},
    {"ComplexDoubleStorage", DType::complex128},
    {"ComplexFloatStorage", DType::complex64},
}};

// Names torch's weights-only unpickler allows that a weights reader does not need (§8.1).
constexpr std::array<std::pair<std::string_view, std::string_view>, 19> torch_allowed_unsupported = {{
    {"collections.Counter", "a Counter"},
    {"torch._utils._rebuild_tensor", "the pre-1.x tensor rebuild"},
    {"torch._utils._rebuild_qtensor", "a quantized tensor"},
    {"torch._utils._rebuild_sparse_tensor", "a sparse tensor"},
    {"torch._utils._rebuild_meta_tensor_no_storage", "a meta tensor"},
    {"torch._utils._rebuild_nested_tensor", "a nested tensor"},
    {"torch._utils._rebuild_wrapper_subclass", "a tensor subclass"},
    {"torch._utils._rebuild_device_tensor_from_numpy", "a numpy-backed tensor"},
    {"torch._utils._rebuild_device_tensor_from_cpu_tensor", "a device tensor"},
    {"torch._tensor._rebuild_from_type_v2", "a tensor with Python attributes or a subclass"},
    {"torch.TypedStorage", "a bare TypedStorage"},
    {"torch.Tensor", "a tensor class"},
    {"torch.nn.parameter.Parameter", "a Parameter built by NEWOBJ"},
    {"torch.serialization._get_layout", "a tensor layout"},
    {"builtins.set", "a set"},
    {"builtins.frozenset", "a frozenset"},
    {"builtins.complex", "a complex number"},
    {"builtins.bytearray", "a bytearray"},
    {"torch.per_tensor_affine", "a quantization scheme"},
}};

std::string python3_module(std::string_view module) {
    if (module == "__builtin__") {
        return "builtins";
    }
    if (module == "copy_reg") {
        return "copyreg";
    }
    return std::string(module);
}

bool ends_with(std::string_view text, std::string_view tail) {
    return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

GlobalLookup allowed(GlobalLookup lookup, GlobalKind kind, std::optional<DType> dtype = std::nullopt) {
    lookup.verdict = GlobalVerdict::allowed;
    lookup.symbol = GlobalSymbol{kind, dtype};
    return lookup;
}

GlobalLookup unsupported(GlobalLookup lookup, std::string_view reason) {
    lookup.verdict = GlobalVerdict::unsupported;
    lookup.reason = reason;
    return lookup;
}

} // namespace

GlobalLookup look_up_global(std::string_view module_spelled, std::string_view name) {
    const std::string module = python3_module(module_spelled);
    GlobalLookup lookup;
    lookup.qualified_name = module + "." + std::string(name);
    const std::string& full = lookup.qualified_name;

    if (full == "collections.OrderedDict") {
        return allowed(std::move(lookup), GlobalKind::ordered_dict);
    }
    if (full == "_codecs.encode") {
        return allowed(std::move(lookup), GlobalKind::codecs_encode);
    }
    if (module == "torch._utils") {
        if (name == "_rebuild_tensor_v2") {
            return allowed(std::move(lookup), GlobalKind::rebuild_tensor_v2);
        }
        if (name == "_rebuild_tensor_v3") {
            return allowed(std::move(lookup), GlobalKind::rebuild_tensor_v3);
        }
        if (name == "_rebuild_parameter") {
            return allowed(std::move(lookup), GlobalKind::rebuild_parameter);
        }
        if (name == "_rebuild_parameter_with_state") {
            return allowed(std::move(lookup), GlobalKind::rebuild_parameter_with_state);
        }
    }
    if (module == "torch" || module == "torch.cuda") {
        for (const auto& storage : storage_classes) {
            if (name == storage.name) {
                return allowed(std::move(lookup), GlobalKind::storage_type, storage.dtype);
            }
        }
    }
    // torch >= 2.1 pickles the storage of a dtype without a legacy class (float8_*,
    // uint16/32/64, complex32) as torch.storage.UntypedStorage; torch.UntypedStorage is the same class.
    if ((module == "torch" || module == "torch.storage") && name == "UntypedStorage") {
        return allowed(std::move(lookup), GlobalKind::storage_type);
    }
    if (module == "torch") {
        if (name == "Size") {
            return allowed(std::move(lookup), GlobalKind::size);
        }
        if (name == "device") {
            return allowed(std::move(lookup), GlobalKind::device);
        }
        if (auto dtype = dtype_from_torch_name(name); dtype && name == torch_name(*dtype)) {
            return allowed(std::move(lookup), GlobalKind::dtype, *dtype);
        }
    }
    for (const auto& [known, reason] : torch_allowed_unsupported) {
        if (full == known) {
            return unsupported(std::move(lookup), reason);
        }
    }
    if ((module == "torch" || module == "torch.cuda") && ends_with(name, "Storage") && name.size() > 7) {
        return unsupported(std::move(lookup), "a storage type this reader does not know (quantized?)");
    }
    if (module == "torch" && ends_with(name, "Tensor") && name.size() > 6) {
        return unsupported(std::move(lookup), "a legacy tensor class");
    }
    // torch dtypes without a DType here: sub-byte, bits, float4, quantized (§7.5).
    static constexpr std::array<std::string_view, 24> other_dtypes = {
        "int1",  "int2",   "int3",   "int4",    "int5",  "int6",   "int7",    "uint1",   "uint2",   "uint3",
        "uint4", "uint5",  "uint6",  "uint7",   "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2", "float4_e2m1fn_x2",
        "qint8", "qint32", "quint8", "quint4x2"};
    if (module == "torch") {
        for (const auto other : other_dtypes) {
            if (name == other || name == "quint2x4") {
                return unsupported(std::move(lookup), "a dtype this reader does not support");
            }
        }
    }
    return lookup;
}

std::string forbidden_global_message(const GlobalLookup& lookup) {
    if (lookup.verdict == GlobalVerdict::unsupported) {
        return "global '" + lookup.qualified_name + "' (" + std::string(lookup.reason) +
               ") is allowed by torch's weights-only loader but not supported by this reader";
    }
    return "forbidden global '" + lookup.qualified_name +
           "' (only the names a weights-only state_dict uses are allowed)";
}

} // namespace ringload::torch_zip
