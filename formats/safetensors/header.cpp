// formats/safetensors/header.cpp
#include "formats/safetensors/header.hpp"

#include "formats/safetensors/dtype_names.hpp"
#include "formats/safetensors/format.hpp"

#include "formats/repeated_name.hpp"
#include "formats/safetensors/header_members.hpp"
#include "formats/safetensors/header_scan.hpp"

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

// The checks every tensor's fields go through, from either parser.
Result<TensorInfo> make_tensor(std::string_view name_text, std::string_view dtype_text,
                               std::vector<std::uint64_t> shape, std::uint64_t begin, std::uint64_t end,
                               std::uint64_t data_start) {
    const std::string name(name_text);
    const auto dtype = dtype_from_safetensors_name(dtype_text);
    if (!dtype) {
        return bad_tensor(name, "unknown dtype \"" + std::string(dtype_text) + "\"");
    }
    if (end < begin) {
        return bad_tensor(
            name, "data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] end before they begin");
    }
    auto elements = shape_from_header(*dtype, std::move(shape));
    if (!elements) {
        return bad_tensor(name, elements.error().detail);
    }
    shape = std::move(*elements);
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
    const std::string& dtype_text = dtype_field->get_ref<const std::string&>();
    if (!dtype_from_safetensors_name(dtype_text)) {
        return bad_tensor(name, "unknown dtype \"" + dtype_text + "\"");
    }
    RL_TRY(shape, parse_shape(name, *shape_field));
    const Json& offsets = *offsets_field;
    if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
        !offsets[1].is_number_unsigned()) {
        return bad_tensor(name, "\"data_offsets\" is not a pair of non-negative integers");
    }
    return make_tensor(name, dtype_text, std::move(shape), offsets[0].get<std::uint64_t>(),
                       offsets[1].get<std::uint64_t>(), data_start);
}

// Neither parser looks keys up while reading: a repeated metadata key is found here.
Result<void> check_unique_metadata(const Index& index) {
    std::unordered_set<std::string_view> keys;
    for (const auto& [key, value] : index.metadata) {
        if (!keys.insert(key).second) {
            return fail(errc::format_error, "safetensors header: \"__metadata__\" key \"" + key + "\" appears twice");
        }
    }
    return {};
}

Result<void> parse_metadata(const Json& metadata, Index& index) {
    if (metadata.is_null()) {
        return {};
    }
    if (!metadata.is_object()) {
        return fail(errc::format_error, "safetensors header: \"__metadata__\" is not an object");
    }
    for (const auto& [key, value] : metadata.items()) {
        if (!value.is_string()) {
            return fail(errc::format_error,
                        "safetensors header: \"__metadata__\" value of \"" + key + "\" is not a string");
        }
        index.metadata.emplace_back(key, value.get<std::string>());
    }
    return check_unique_metadata(index);
}

// The reference keeps the last of two entries with one name; a second entry for a name is
// refused here instead (one name, one tensor).
Result<void> check_unique_names(const Index& index) {
    const auto again = find_repeated_name(index.tensors.size(),
                                          [&](std::size_t i) { return std::string_view(index.tensors[i].name); });
    if (again) {
        return bad_tensor(index.tensors[*again].name, "the name appears twice in the header");
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

// The fast scan of a writer's header, or (when the header leaves its shape) the general parser.
Result<void> read_members(std::string_view text, std::uint64_t data_start, Index& index) {
    ScanVisitor visitor;
    visitor.tensor = [&](ScannedEntry& entry) -> Result<void> {
        RL_TRY(tensor, make_tensor(entry.name, entry.dtype, std::move(entry.shape), entry.begin_bytes, entry.end_bytes,
                                   data_start));
        index.tensors.push_back(std::move(tensor));
        return {};
    };
    visitor.metadata = [&](std::string_view key, std::string_view value) -> Result<void> {
        index.metadata.emplace_back(std::string(key), std::string(value));
        return {};
    };
    if (auto scanned = scan_header(text, visitor)) {
        RL_TRY_VOID(*scanned);
        return check_unique_metadata(index);
    }
    index.tensors.clear();
    index.metadata.clear();
    bool saw_metadata = false;
    // A valid header nests 4 levels; a hostile one could nest a million (the reference stops at
    // 128): for_each_member refuses it without recursing.
    return for_each_member(text, max_json_depth, [&](std::string& name, Json& entry) -> Result<void> {
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
    });
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
    RL_TRY_VOID(read_members(text, data_start, index));
    RL_TRY_VOID(check_unique_names(index));
    const auto by_offset = [](const TensorInfo& a, const TensorInfo& b) {
        return a.data_offset_bytes != b.data_offset_bytes ? a.data_offset_bytes < b.data_offset_bytes
                                                          : a.data_length_bytes < b.data_length_bytes;
    };
    // Writers list tensors in data order: a million TensorInfo moves spared when already sorted.
    if (!std::is_sorted(index.tensors.begin(), index.tensors.end(), by_offset)) {
        std::stable_sort(index.tensors.begin(), index.tensors.end(), by_offset);
    }
    RL_TRY_VOID(check_coverage(index, data_start, file_size));
    return index;
}

} // namespace ringload::safetensors
