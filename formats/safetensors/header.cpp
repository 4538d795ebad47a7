// formats/safetensors/header.cpp
#include "formats/safetensors/header.hpp"

#include "formats/safetensors/dtype_names.hpp"
#include "formats/safetensors/format.hpp"

#include "formats/safetensors/header_members.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_set>

namespace ringload::safetensors {
namespace {

constexpr int max_json_depth = 16;

Error bad_tensor(const std::string& name, const std::string& what) {
    return fail(errc::format_error, "safetensors header: tensor '" + name + "': " + what);
}

Result<std::vector<std::uint64_t>> parse_shape(const std::string& name, const Json& shape) {
    if (!shape.is_array()) {
        return bad_tensor(name, "\"shape\" is not a list");
    }
    std::vector<std::uint64_t> dims;
    for (const auto& dim : shape) {
        if (!dim.is_number_unsigned()) {
            return bad_tensor(name,
                              std::string("\"shape\" holds a ") + dim.type_name() + ", not a non-negative integer");
        }
        dims.push_back(dim.get<std::uint64_t>());
    }
    return dims;
}

Result<TensorInfo> parse_tensor(const std::string& name, const Json& entry, std::uint64_t data_start) {
    if (!entry.is_object()) {
        return bad_tensor(name, "its entry is not an object");
    }
    const auto dtype_field = entry.find("dtype");
    const auto shape_field = entry.find("shape");
    const auto offsets_field = entry.find("data_offsets");
    if (dtype_field == entry.end() || shape_field == entry.end() || offsets_field == entry.end()) {
        return bad_tensor(name, "needs \"dtype\", \"shape\" and \"data_offsets\"");
    }
    if (!dtype_field->is_string()) {
        return bad_tensor(name, "\"dtype\" is not a string");
    }
    const auto dtype = dtype_from_safetensors_name(dtype_field->get<std::string>());
    if (!dtype) {
        return bad_tensor(name, "unknown dtype \"" + dtype_field->get<std::string>() + "\"");
    }
    RL_TRY(shape, parse_shape(name, *shape_field));
    const Json& offsets = *offsets_field;
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
        return bad_tensor(name, "\"data_offsets\" is not a pair of non-negative integers");
    }
    const auto begin = offsets[0].get<std::uint64_t>();
    const auto end = offsets[1].get<std::uint64_t>();
    if (end < begin) {
        return bad_tensor(
            name, "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] end before they begin");
    }
    const auto expected = checked_byte_length(shape, *dtype);
    if (!expected) {
        return bad_tensor(name, "its shape's byte count overflows 64 bits");
    }
    if (*expected != end - begin) {
        return bad_tensor(name, "shape and dtype make " + std::to_string(*expected) + " bytes but data_offsets [" +
                                    std::to_string(begin) + ", " + std::to_string(end) + "] hold " +
                                    std::to_string(end - begin));
    }
    TensorInfo tensor;
    tensor.name = name;
    tensor.path = {name};
    tensor.dtype = *dtype;
    tensor.shape = std::move(shape);
    tensor.byte_length = end - begin;
    tensor.record_offset_bytes = data_start + begin;
    tensor.data_offset_bytes = data_start + begin;
    tensor.data_length_bytes = end - begin;
    return tensor;
}

Result<void> parse_metadata(const Json& metadata, Index& index) {
    if (metadata.is_null()) {
        return {};
    }
    if (!metadata.is_object()) {
        return fail(errc::format_error, "safetensors header: \"__metadata__\" is not an object");
    }
    std::unordered_set<std::string_view> keys; // the member builder keeps a repeated key twice
    for (const auto& [key, value] : metadata.items()) {
        if (!value.is_string()) {
            return fail(errc::format_error,
                        "safetensors header: \"__metadata__\" value of \"" + key + "\" is not a string");
        }
        if (!keys.insert(key).second) {
            return fail(errc::format_error, "safetensors header: \"__metadata__\" key \"" + key + "\" appears twice");
        }
        index.metadata.emplace_back(key, value.get<std::string>());
    }
    return {};
}

// The reference keeps the last of two entries with one name; a second entry for a name is
// refused here instead (one name, one tensor). Hashing keeps a million names linear.
Result<void> check_unique_names(const Index& index) {
    std::unordered_set<std::string_view> names;
    names.reserve(index.tensors.size());
    for (const auto& tensor : index.tensors) {
        if (!names.insert(tensor.name).second) {
            return bad_tensor(tensor.name, "the name appears twice in the header");
        }
    }
    return {};
}

// Sorted by offset, the tensors must tile [data_start, file_size) exactly.
Result<void> check_coverage(const Index& index, std::uint64_t data_start, std::uint64_t file_size) {
    std::uint64_t expected = data_start;
    for (const auto& tensor : index.tensors) {
        if (tensor.data_offset_bytes != expected) {
            const std::string what = tensor.data_offset_bytes > expected ? "leaves a hole before it" : "overlaps";
            return bad_tensor(tensor.name, "data_offsets begin at " +
                                               std::to_string(tensor.data_offset_bytes - data_start) + ", which " +
                                               what + " (the previous tensor ends at " +
                                               std::to_string(expected - data_start) + ")");
        }
        expected += tensor.data_length_bytes;
    }
    if (expected != file_size) {
        return fail(errc::truncated, "safetensors: the tensors' data ends at byte " + std::to_string(expected) +
                                         " but the file has " + std::to_string(file_size) + " bytes");
    }
    return {};
}

} // namespace

Result<std::uint64_t> parse_header_length(std::span<const std::byte> first_bytes, std::uint64_t file_size) {
    if (first_bytes.size() < length_field_bytes || file_size < length_field_bytes) {
        return fail(errc::truncated, "safetensors: the file ends inside the 8-byte header length");
    }
    std::uint64_t length = 0;
    for (std::size_t k = 0; k < length_field_bytes; ++k) {
        length |= static_cast<std::uint64_t>(std::to_integer<std::uint8_t>(first_bytes[k])) << (8 * k);
    }
    if (length > max_header_bytes) {
        return fail(errc::format_error,
                    "safetensors: header length " + std::to_string(length) + " is over the 100 MB limit");
    }
    if (length > file_size - length_field_bytes) {
        return fail(errc::truncated, "safetensors: header of " + std::to_string(length) +
                                         " bytes does not fit in the file's " + std::to_string(file_size) + " bytes");
    }
    return length;
}

Result<Index> parse_header(std::span<const std::byte> header, std::uint64_t file_size) {
    if (header.empty() || header.front() != std::byte{'{'}) {
        return fail(errc::format_error, "safetensors: the header does not start with '{'");
    }
    const std::string_view text(reinterpret_cast<const char*>(header.data()), header.size());
    const std::uint64_t data_start = length_field_bytes + header.size();
    Index index;
    index.format = &format;
    index.source_size_bytes = file_size;
    bool saw_metadata = false;
    // A valid header nests 4 levels; a hostile one could nest a million (the reference stops at
    // 128): for_each_member refuses it without recursing.
    RL_TRY_VOID(for_each_member(text, max_json_depth, [&](std::string& name, Json& entry) -> Result<void> {
        if (name == "__metadata__") {
            if (saw_metadata) {
                return fail(errc::format_error, "safetensors header: \"__metadata__\" appears twice");
            }
            saw_metadata = true;
            return parse_metadata(entry, index);
        }
        RL_TRY(tensor, parse_tensor(name, entry, data_start));
        index.tensors.push_back(std::move(tensor));
        return {};
    }));
    RL_TRY_VOID(check_unique_names(index));
    std::stable_sort(index.tensors.begin(), index.tensors.end(), [](const TensorInfo& a, const TensorInfo& b) {
        return a.data_offset_bytes != b.data_offset_bytes ? a.data_offset_bytes < b.data_offset_bytes
                                                          : a.data_length_bytes < b.data_length_bytes;
    });
    RL_TRY_VOID(check_coverage(index, data_start, file_size));
    return index;
}

} // namespace ringload::safetensors
