// formats/safetensors/format.cpp
#include "formats/safetensors/format.hpp"

#include "formats/format_hooks.hpp"
#include "formats/safetensors/header.hpp"
#include "formats/safetensors/reader.hpp"
#include "formats/safetensors/write_graph.hpp"
#include "formats/write_graph_adapter.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <string>
#include <string_view>

namespace ringload::safetensors {
namespace {

Detection detect(std::span<const std::byte> head, std::uint64_t size_bytes) {
    return has_safetensors_shape(head, size_bytes) ? Detection::yes() : Detection::no();
}

// What keeps `head` from being a safetensors header, in safetensors' own words (its error
// names in brackets), for a caller who meant safetensors; "" where it looks like one.
std::string why_not(std::span<const std::byte> head, std::uint64_t size_bytes) {
    constexpr std::string_view prefix = "Error while deserializing header: ";
    if (size_bytes < length_field_bytes || head.size() < length_field_bytes) {
        return std::string(prefix) + "the file has " + std::to_string(size_bytes) +
               " bytes, fewer than the 8-byte header length a safetensors file starts with (HeaderTooSmall)";
    }
    std::uint64_t length = 0;
    for (std::size_t i = 0; i < length_field_bytes; ++i) {
        length |= static_cast<std::uint64_t>(head[i]) << (8 * i);
    }
    const std::string says =
        "the header length (first 8 bytes, little-endian) says " + std::to_string(length) + " bytes";
    if (length == 0) {
        return std::string(prefix) + "the header length (first 8 bytes, little-endian) is 0 (InvalidHeaderLength)";
    }
    if (length > max_header_bytes) {
        return std::string(prefix) + says + ", more than safetensors' limit of " + std::to_string(max_header_bytes) +
               " (HeaderTooLarge)";
    }
    if (length > size_bytes - length_field_bytes) {
        return std::string(prefix) + says + ", but only " + std::to_string(size_bytes - length_field_bytes) +
               " follow it (InvalidHeaderLength)";
    }
    if (head.size() > length_field_bytes && head[length_field_bytes] != std::byte{'{'}) {
        return std::string(prefix) + "the header does not start with '{' (InvalidHeaderStart)";
    }
    return "";
}

// The header's __metadata__ (string to string), shown whole.
FormatDescription describe(const Index& index, DescriptionParts parts) {
    std::string text = "safetensors, " + std::to_string(index.metadata.size()) + " metadata entries";
    if (parts == DescriptionParts::text) {
        return {std::move(text), {}};
    }
    nlohmann::json metadata = nlohmann::json::object();
    for (const auto& [key, value] : index.metadata) {
        metadata[key] = value;
    }
    nlohmann::json extras;
    extras["metadata"] = std::move(metadata);
    return {std::move(text), extras.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)};
}

Result<std::unique_ptr<FormatWriteGraph>> create_write_graph(std::span<const TensorToWrite> tensors,
                                                             const WriteLayout& layout, std::string target_name,
                                                             DeviceLink* device) {
    LayoutOptions options;
    options.alignment_bytes = layout.alignment_bytes;
    options.metadata = layout.metadata;
    options.keep_order = layout.keep_order;
    RL_TRY(graph, WriteGraph::create(tensors, options, std::move(target_name), device));
    return adapt_write_graph(std::move(graph));
}

constexpr FormatHooks hooks{&detect, &read_index, &describe, &create_write_graph, &build_plain_load_graph, &why_not};
constexpr std::array<std::string_view, 1> extensions{".safetensors"};

} // namespace

const Format format{.name = "safetensors",
                    .title = "safetensors",
                    .extensions = extensions,
                    .stores_hashes = false,
                    .may_be_encrypted = false,
                    .tensors_view_storages = false,
                    .has_data_version = false,
                    .keys_records = false,
                    .tensors_mappable = true,
                    .hooks = &hooks};

} // namespace ringload::safetensors
