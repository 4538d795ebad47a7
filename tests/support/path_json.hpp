// tests/support/path_json.hpp
//
// A tensor path as JSON (keys as strings, list indexes as numbers), as the tools that write
// files for the Python peer tests record what they wrote.
#pragma once

#include "ringload/tensor_info.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <variant>
#include <vector>

namespace ringload::testing {

inline nlohmann::json path_json(const std::vector<PathComponent>& path) {
    auto out = nlohmann::json::array();
    for (const auto& part : path) {
        if (const auto* key = std::get_if<std::string>(&part)) {
            out.push_back(*key);
        } else {
            out.push_back(std::get<std::uint64_t>(part));
        }
    }
    return out;
}

} // namespace ringload::testing
