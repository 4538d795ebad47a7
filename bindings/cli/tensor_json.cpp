// bindings/cli/tensor_json.cpp
#include "tensor_json.hpp"

namespace ringload::cli {

nlohmann::json path_json(const TensorInfo& tensor) {
    nlohmann::json path = nlohmann::json::array();
    for (const auto& component : tensor.path) {
        if (const auto* key = std::get_if<std::string>(&component)) {
            path.push_back(*key);
        } else {
            path.push_back(std::get<std::uint64_t>(component));
        }
    }
    return path;
}

nlohmann::json shape_json(const TensorInfo& tensor) {
    nlohmann::json shape = nlohmann::json::array();
    for (auto dim : tensor.shape) {
        shape.push_back(dim);
    }
    return shape;
}

std::string dump_json(const nlohmann::json& value) {
    return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace ringload::cli
