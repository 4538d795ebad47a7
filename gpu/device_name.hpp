// gpu/device_name.hpp
//
// Where a load puts its tensors, as torch spells it: "cpu", "cuda" (device 0) or "cuda:N".
//
//     RL_TRY(ordinal, parse_device("cuda:1"));   // 1; "cpu" gives cpu_ordinal
#pragma once

#include "ringload/error.hpp"

#include <string>
#include <string_view>

namespace ringload::gpu {

inline constexpr int cpu_ordinal = -1;

// The CUDA device ordinal, or cpu_ordinal; anything else is an error naming the text.
Result<int> parse_device(std::string_view text);

// "cpu" or "cuda:N".
std::string device_name(int ordinal);

} // namespace ringload::gpu
