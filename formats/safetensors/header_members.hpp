// formats/safetensors/header_members.hpp
//
// The top-level members of a safetensors header, in the file's order, in time linear in the
// header's size. nlohmann's ordered_json looks every key up one by one while it builds an
// object, so a header of a million tensors took minutes; here the top level is never built as
// one object: each member's value is built on its own (a tensor's entry is a few fields) and
// handed to `visit` as soon as its closing bracket is read, then dropped.
//
//     RL_TRY_VOID(for_each_member(text, 16, [&](std::string& key, Json& value) -> Result<void> {...}));
//
// Objects below the top level are built without looking their keys up either (a repeated key
// is kept twice; callers that care, "__metadata__", check). A value nested deeper than
// `max_depth` stops the parse (no recursion: a hostile header may nest a million levels).
#pragma once

#include "ringload/error.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <string_view>

namespace ringload::safetensors {

using Json = nlohmann::ordered_json;

// Calls `visit` once per top-level member; stops at its first error and returns it. A text
// that is not one JSON object, or nests too deep, is a format_error saying so.
Result<void> for_each_member(std::string_view text, int max_depth,
                             const std::function<Result<void>(std::string& key, Json& value)>& visit);

} // namespace ringload::safetensors
