// formats/safetensors/header_json.cpp
#include "formats/safetensors/header_json.hpp"

#include "formats/safetensors/dtype_names.hpp"

#include <nlohmann/json.hpp>

#include <cstring>

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

Result<std::vector<std::byte>> build_header(std::span<const HeaderEntry> entries,
                                            std::span<const std::pair<std::string, std::string>> metadata,
                                            std::size_t alignment_bytes) {
    if (alignment_bytes != 8 && alignment_bytes != 64) {
        return fail(errc::invalid_argument,
                    "a safetensors alignment of " + std::to_string(alignment_bytes) + " bytes (8 or 64)");
    }
    // ordered_json keeps insertion order: the reference writes "__metadata__" first and each
    // tensor's fields as dtype, shape, data_offsets.
    nlohmann::ordered_json header = nlohmann::ordered_json::object();
    if (!metadata.empty()) {
        auto& strings = header["__metadata__"] = nlohmann::ordered_json::object();
        for (const auto& [key, value] : metadata) {
            if (strings.contains(key)) {
                return fail(errc::invalid_argument, "metadata key '" + key + "' given twice");
            }
            strings[key] = value;
        }
    }
    for (const auto& entry : entries) {
        RL_TRY(name, dtype_name(entry.dtype));
        header[entry.name] = {
            {"dtype", name}, {"shape", entry.shape}, {"data_offsets", {entry.begin_bytes, entry.end_bytes}}};
    }
    std::string text;
    try {
        text = header.dump();
    } catch (const nlohmann::json::exception& e) {
        return fail(errc::invalid_tensor_name,
                    std::string("a name or metadata string is not valid UTF-8 (") + e.what() + ")");
    }
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
