// bindings/cpp/src/format_detect.hpp
//
// Which format a source holds, from its first bytes (never from its name): tensorizer's
// "|TZR|" magic, a zip's "PK\x03\x04" (torch.save), a legacy torch pickle, or a safetensors
// length field followed by '{'. Then that format's reader builds the Index.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/tensor_info.hpp"

namespace ringload {

Task<Result<Index>> read_any_index(Source& source);

} // namespace ringload
