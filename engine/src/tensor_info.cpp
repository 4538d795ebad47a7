// engine/src/tensor_info.cpp
#include "ringload/tensor_info.hpp"

#include <limits>

#include <numeric>

namespace ringload {

std::uint64_t TensorInfo::numel() const noexcept {
    return std::accumulate(shape.begin(), shape.end(), std::uint64_t{1},
                           [](std::uint64_t a, std::uint64_t b) { return a * b; });
}

std::string TensorInfo::display_name() const {
    return path.size() <= 1 ? name : dotted_path(path);
}

std::string dotted_path(const std::vector<PathComponent>& path) {
    std::string text;
    for (const auto& component : path) {
        if (!text.empty()) {
            text += '.';
        }
        if (const auto* key = std::get_if<std::string>(&component)) {
            text += *key;
        } else {
            text += std::to_string(std::get<std::uint64_t>(component));
        }
    }
    return text;
}

std::uint64_t Index::total_tensor_bytes() const noexcept {
    std::uint64_t total = 0;
    for (const auto& tensor : tensors) {
        total += tensor.byte_length;
    }
    return total;
}

std::optional<std::uint64_t> checked_byte_length(std::span<const std::uint64_t> shape, DType dtype) noexcept {
    std::uint64_t count = 1;
    for (auto dim : shape) {
        if (dim != 0 && count > std::numeric_limits<std::uint64_t>::max() / dim) {
            return std::nullopt;
        }
        count *= dim;
    }
    const std::uint64_t size = itemsize(dtype);
    if (count != 0 && size > std::numeric_limits<std::uint64_t>::max() / count) {
        return std::nullopt;
    }
    return count * size;
}

} // namespace ringload
