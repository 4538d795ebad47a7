// formats/tensorizer/tensor_name.hpp
//
// tensorizer names are either plain UTF-8 ("layer.0.weight") or, for nested state dicts, a
// path: 0x1E followed by a compact JSON array of strings and non-negative integers
// (`\x1e["model","layers",0,"weight"]`). See tensorizer-format.md §5.3.
#pragma once

#include "ringload/error.hpp"
#include "ringload/tensor_info.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace ringload::tensorizer {

inline constexpr char structured_name_marker = '\x1e';

Result<std::vector<PathComponent>> parse_tensor_name(std::string_view raw);

// Rejects paths that cannot form one tree: duplicates, a leaf that is also a prefix of
// another path, and a level that mixes string and integer keys.
Result<void> check_name_tree(const std::vector<TensorInfo>& tensors);

// The inverse, for writers.
std::string encode_structured_name(const std::vector<PathComponent>& path);

} // namespace ringload::tensorizer
