// formats/safetensors/header_json.cpp
#include "formats/safetensors/header_json.hpp"

#include "formats/safetensors/dtype_names.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <string_view>
#include <unordered_set>

namespace ringload::safetensors {

Result<std::string_view> dtype_name(DType dtype) {
    // Written: every dtype recent safetensors writes (C64, F8_E8M0 and the fnuz float8s since
    // 0.5-0.7; older readers refuse those names, as they would safetensors' own files).
    if (const auto name = safetensors_name(dtype)) {
        return *name;
    }
    return fail(errc::unsupported, "dtype " + std::string(torch_name(dtype)) +
                                       " has no safetensors name (safetensors stores F64 F32 F16 BF16 C64 I64 "
                                       "I32 I16 I8 U8 U16 U32 U64 BOOL F8_E4M3 F8_E5M2 F8_E8M0 F8_E4M3FNUZ "
                                       "F8_E5M2FNUZ); convert it first");
}

int reference_rank(DType dtype) {
    return safetensors_rank(dtype);
}

namespace {

// A quoted, escaped JSON string; throws nlohmann's type_error on invalid UTF-8.
std::string json_string(const std::string& value) {
    return nlohmann::json(value).dump();
}

void append_fields(std::string& text, std::string_view dtype, const HeaderEntry& entry) {
    text += "{\"dtype\":\"";
    text += dtype;
    text += "\",\"shape\":[";
    for (std::size_t i = 0; i < entry.shape.size(); ++i) {
        text += (i == 0 ? "" : ",") + std::to_string(entry.shape[i]);
    }
    text += "],\"data_offsets\":[" + std::to_string(entry.begin_bytes) + "," + std::to_string(entry.end_bytes) + "]}";
}

} // namespace

Result<std::vector<std::byte>> build_header(std::span<const HeaderEntry> entries,
                                            std::span<const std::pair<std::string, std::string>> metadata,
                                            std::size_t alignment_bytes) {
    if (alignment_bytes != 8 && alignment_bytes != 64) {
        return fail(errc::invalid_argument,
                    "a safetensors alignment of " + std::to_string(alignment_bytes) + " bytes (8 or 64)");
    }
    // Written text by text, not as one ordered_json object: that type looks each key up as it
    // is added, which made a million tensors quadratic. The order is the reference's:
    // "__metadata__" first, each tensor's fields as dtype, shape, data_offsets.
    std::string text = "{";
    try {
        if (!metadata.empty()) {
            text += "\"__metadata__\":{";
            std::unordered_set<std::string_view> keys;
            for (const auto& [key, value] : metadata) {
                if (!keys.insert(key).second) {
                    return fail(errc::invalid_argument, "metadata key '" + key + "' given twice");
                }
                text += (keys.size() == 1 ? "" : ",") + json_string(key) + ":" + json_string(value);
            }
            text += "}";
        }
        for (const auto& entry : entries) {
            RL_TRY(name, dtype_name(entry.dtype));
            text += (text.size() == 1 ? "" : ",") + json_string(entry.name) + ":";
            append_fields(text, name, entry);
        }
    } catch (const nlohmann::json::exception& e) {
        return fail(errc::invalid_tensor_name,
                    std::string("a name or metadata string is not valid UTF-8 (") + e.what() + ")");
    }
    text += "}";
    // Spaces up to the alignment: JSON ends at the closing brace, readers skip the whitespace.
    const std::size_t unpadded = sizeof(std::uint64_t) + text.size();
    text.append((alignment_bytes - unpadded % alignment_bytes) % alignment_bytes, ' ');
    std::vector<std::byte> bytes(sizeof(std::uint64_t) + text.size());
    std::uint64_t length = text.size();
    for (std::size_t i = 0; i < sizeof length; ++i) {
        bytes[i] = static_cast<std::byte>(length >> (8 * i));
    }
    std::memcpy(bytes.data() + sizeof length, text.data(), text.size());
    return bytes;
}

} // namespace ringload::safetensors
