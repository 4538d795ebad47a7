// bindings/cli/tensor_json.cpp
#include "tensor_json.hpp"

#include <string_view>

namespace ringload::cli {
namespace {

// The second byte of a C1 control's UTF-8 (0xc2 0x80..0xc2 0x9f).
bool is_c1_low(char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte >= 0x80 && byte <= 0x9f;
}

// nlohmann escapes U+0000..U+001F only: DEL and the C1 controls (U+0080..U+009F; U+009B is a
// terminal's CSI) would reach a terminal raw, so they become \u escapes too. In a dump they can
// only lie inside strings, and the dump is valid UTF-8 (error_handler_t::replace), so byte 0x7f
// is DEL and 0xc2 (never a continuation byte) followed by 0x80..0x9f is a C1 control.
std::string escape_del_and_c1(std::string text) {
    constexpr std::string_view suspects = "\x7f\xc2";
    std::size_t at = text.find_first_of(suspects);
    if (at == std::string::npos) { // nearly every dump: returned as it is
        return text;
    }
    std::string out(text, 0, at);
    out.reserve(text.size() + 16);
    for (; at < text.size(); ++at) {
        const auto byte = static_cast<unsigned char>(text[at]);
        if (byte == 0x7f) {
            out += "\\u007f";
        } else if (byte == 0xc2 && at + 1 < text.size() && is_c1_low(text[at + 1])) {
            const auto low = static_cast<unsigned char>(text[++at]); // U+0080..U+009F: the code point
            constexpr std::string_view hex = "0123456789abcdef";
            out += "\\u00";
            out += hex[low >> 4];
            out += hex[low & 0xf];
        } else {
            out += text[at];
        }
    }
    return out;
}

} // namespace

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
    return escape_del_and_c1(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

} // namespace ringload::cli
