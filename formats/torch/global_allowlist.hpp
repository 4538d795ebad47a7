// formats/torch/global_allowlist.hpp
//
// Which pickle GLOBALs a weights-only torch checkpoint may name (torch-zip-format.md §8.2):
// the rebuild functions, storage classes, dtypes and the few builtins a state_dict or a
// training checkpoint uses. Nothing is imported: a name maps to an inert symbol or is refused.
#pragma once

#include "ringload/dtype.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace ringload::torch_zip {

enum class GlobalKind : std::uint8_t {
    ordered_dict,                 // collections.OrderedDict
    rebuild_tensor_v2,            // torch._utils._rebuild_tensor_v2
    rebuild_tensor_v3,            // torch._utils._rebuild_tensor_v3
    rebuild_parameter,            // torch._utils._rebuild_parameter
    rebuild_parameter_with_state, // torch._utils._rebuild_parameter_with_state
    storage_type,                 // torch.FloatStorage, torch.cuda.HalfStorage, torch.UntypedStorage
    dtype,                        // torch.float16, ...
    size,                         // torch.Size
    device,                       // torch.device
    codecs_encode,                // _codecs.encode (bytes in protocol 2)
};

enum class GlobalVerdict : std::uint8_t {
    allowed,
    unsupported, // torch's weights-only loader allows it, this reader does not handle it
    forbidden,
};

struct GlobalSymbol {
    GlobalKind kind = GlobalKind::ordered_dict;
    std::optional<DType> dtype; // storage_type (nullopt: UntypedStorage) and dtype symbols
};

struct GlobalLookup {
    GlobalVerdict verdict = GlobalVerdict::forbidden;
    GlobalSymbol symbol;
    std::string qualified_name; // "os.system", after Python-2 module renames
    std::string_view reason;    // for unsupported names: what it is
};

// `module` and `name` as the GLOBAL opcode spells them ("__builtin__" is mapped to "builtins").
GlobalLookup look_up_global(std::string_view module, std::string_view name);

// The refusal message for a name that is not allowed, naming it.
std::string forbidden_global_message(const GlobalLookup& lookup);

} // namespace ringload::torch_zip
