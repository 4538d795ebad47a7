// bindings/cli/tensor_json.hpp
//
// JSON views of the index and of loaded tensors, shared by `info --json` and `load --json`.
#pragma once

#include "ringload/tensor_info.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace ringload::cli {

nlohmann::json path_json(const TensorInfo& tensor);
nlohmann::json shape_json(const TensorInfo& tensor);
// Names may hold any bytes: invalid UTF-8 is replaced rather than thrown on, and DEL and the C1
// controls (U+007F..U+009F), which nlohmann writes raw, are written as \u escapes.
std::string dump_json(const nlohmann::json& value);

} // namespace ringload::cli
