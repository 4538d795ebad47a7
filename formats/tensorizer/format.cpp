// formats/tensorizer/format.cpp
#include "formats/tensorizer/format.hpp"

#include "formats/format_hooks.hpp"
#include "formats/tensorizer/load_graph.hpp"
#include "formats/tensorizer/reader.hpp"
#include "formats/tensorizer/write_graph.hpp"
#include "formats/write_graph_adapter.hpp"

#include <array>
#include <string>
#include <string_view>

namespace ringload::tensorizer {
namespace {

Detection detect(std::span<const std::byte> head, std::uint64_t size_bytes) {
    (void)size_bytes;
    // An empty file counts as tensorizer's, whose reader says what is missing.
    return has_tensorizer_magic(head) ? Detection::yes() : Detection::no();
}

FormatDescription describe(const Index& index, DescriptionParts parts) {
    (void)parts; // the json is empty: no cost to skip
    return {"tensorizer, data version " + std::to_string(index.data_version) +
                ", feature flags: " + (index.encrypted ? "encrypted" : "none"),
            "{}"};
}

Result<std::unique_ptr<FormatWriteGraph>> create_write_graph(std::span<const TensorToWrite> tensors,
                                                             const WriteLayout& layout, std::string target_name,
                                                             DeviceLink* device) {
    RL_TRY(graph, WriteGraph::create(tensors, layout.encryption, std::move(target_name), device));
    return adapt_write_graph(std::move(graph));
}

constexpr FormatHooks hooks{&detect, &read_index, &describe, &create_write_graph, &build_load_graph};
constexpr std::array<std::string_view, 1> extensions{".tensors"};

} // namespace

const Format format{.name = "tensorizer",
                    .title = "tensorizer",
                    .extensions = extensions,
                    .stores_hashes = true,
                    .may_be_encrypted = true,
                    .tensors_view_storages = false,
                    .has_data_version = true,
                    .keys_records = true,
                    .tensors_mappable = false,
                    .hooks = &hooks};

} // namespace ringload::tensorizer
