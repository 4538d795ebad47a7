// formats/tensorizer/tensor_name.cpp
#include "formats/tensorizer/tensor_name.hpp"

#include "formats/repeated_name.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

namespace ringload::tensorizer {

Result<std::vector<PathComponent>> parse_tensor_name(std::string_view raw) {
    if (raw.empty()) {
        return fail(errc::invalid_tensor_name, "empty tensor name");
    }
    if (raw.front() != structured_name_marker) {
        return std::vector<PathComponent>{std::string(raw)};
    }
    std::string_view json_text = raw.substr(1);
    if (json_text.find_first_of("\r\n") != std::string_view::npos) {
        return fail(errc::invalid_tensor_name, "structured name contains a line break");
    }
    auto parsed = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded() || !parsed.is_array()) {
        return fail(errc::invalid_tensor_name, "structured name is not a JSON array");
    }
    if (parsed.empty()) {
        return fail(errc::invalid_tensor_name, "structured name is an empty path");
    }
    std::vector<PathComponent> path;
    for (const auto& component : parsed) {
        if (component.is_string()) {
            path.emplace_back(component.get<std::string>());
        } else if (component.is_number_unsigned()) {
            path.emplace_back(component.get<std::uint64_t>());
        } else {
            return fail(errc::invalid_tensor_name,
                        "structured name has a component that is neither a string nor a non-negative integer");
        }
    }
    return path;
}

namespace {

// Flat string names (most files) form a tree only when no name repeats: no set of paths is
// needed, and a million names are checked in a fraction of the tree check's time.
bool all_flat_strings(const std::vector<TensorInfo>& tensors) {
    return std::all_of(tensors.begin(), tensors.end(), [](const TensorInfo& tensor) {
        return tensor.path.size() == 1 && std::holds_alternative<std::string>(tensor.path[0]);
    });
}

} // namespace

Result<void> check_name_tree(const std::vector<TensorInfo>& tensors) {
    if (all_flat_strings(tensors)) {
        const auto again = find_repeated_name(
            tensors.size(), [&](std::size_t i) { return std::string_view(std::get<std::string>(tensors[i].path[0])); });
        if (again) {
            return fail(errc::invalid_tensor_name, "tensor '" + tensors[*again].display_name() + "' appears twice");
        }
        return {};
    }
    std::set<std::vector<PathComponent>> leaves;
    std::set<std::vector<PathComponent>> prefixes;
    // For each parent path, whether its children are keyed by strings (0) or integers (1).
    std::map<std::vector<PathComponent>, std::size_t> child_kind;
    for (const auto& tensor : tensors) {
        const auto& path = tensor.path;
        if (!leaves.insert(path).second) {
            return fail(errc::invalid_tensor_name, "tensor '" + tensor.display_name() + "' appears twice");
        }
        if (prefixes.contains(path)) {
            return fail(errc::invalid_tensor_name,
                        "tensor '" + tensor.display_name() + "' is also the parent of other tensors");
        }
        std::vector<PathComponent> parent;
        for (std::size_t depth = 0; depth < path.size(); ++depth) {
            auto [kind, inserted] = child_kind.emplace(parent, path[depth].index());
            if (!inserted && kind->second != path[depth].index()) {
                return fail(errc::invalid_tensor_name,
                            "tensor '" + tensor.display_name() + "' mixes string and integer keys at one level");
            }
            parent.push_back(path[depth]);
            if (depth + 1 < path.size()) {
                if (leaves.contains(parent)) {
                    return fail(errc::invalid_tensor_name,
                                "tensor '" + tensor.display_name() + "' lies below another tensor");
                }
                prefixes.insert(parent);
            }
        }
    }
    return {};
}

std::string encode_structured_name(const std::vector<PathComponent>& path) {
    nlohmann::json array = nlohmann::json::array();
    for (const auto& component : path) {
        if (const auto* key = std::get_if<std::string>(&component)) {
            array.push_back(*key);
        } else {
            array.push_back(std::get<std::uint64_t>(component));
        }
    }
    // ensure_ascii: tensorizer writes \uXXXX escapes (and surrogate pairs) for non-ASCII.
    return std::string(1, structured_name_marker) + array.dump(-1, ' ', /*ensure_ascii=*/true);
}

} // namespace ringload::tensorizer
