// formats/torch/format.cpp
#include "formats/torch/format.hpp"

#include "formats/format_hooks.hpp"
#include "formats/torch/reader.hpp"
#include "formats/torch_writer/write_graph.hpp"
#include "formats/write_graph_adapter.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

namespace ringload::torch_zip {
namespace {

// A zip is torch.save's since 1.6. An older file (a pickle stream) is refused here with the
// words the reader gives it when opened directly.
Detection detect(std::span<const std::byte> head, std::uint64_t size_bytes) {
    (void)size_bytes;
    if (has_torch_zip_magic(head)) {
        return Detection::yes();
    }
    if (has_legacy_torch_magic(head)) {
        return Detection::refuse(legacy_error());
    }
    return Detection::no();
}

// A storage key as a JSON string: torch's keys are decimal and need no escaping (a json object
// and its dump per key was a tenth of `ringload info` at a million storages); others go
// through nlohmann.
std::string key_json(const std::string& key) {
    const bool plain = std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.';
    });
    if (plain) {
        return "\"" + key + "\"";
    }
    return nlohmann::json(key).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The storages the tensors view, and their byte order. Written as text: a JSON object per
// storage cost more than reading the index (a million storages).
FormatDescription describe(const Index& index, DescriptionParts parts) {
    std::string text = "torch zip, " + std::to_string(index.storages.size()) + " storages, " +
                       (index.big_endian ? "big" : "little") + "-endian";
    if (parts == DescriptionParts::text) {
        return {std::move(text), {}};
    }
    std::string json = std::string("{\"big_endian\":") + (index.big_endian ? "true" : "false") + ",\"storages\":[";
    for (std::size_t i = 0; i < index.storages.size(); ++i) {
        const auto& storage = index.storages[i];
        json += (i == 0 ? "{\"bytes\":" : ",{\"bytes\":") + std::to_string(storage.byte_length) +
                ",\"data_offset\":" + std::to_string(storage.data_offset_bytes) + ",\"dtype\":\"" +
                std::string(torch_name(storage.dtype)) + "\",\"key\":" + key_json(storage.key) + "}";
    }
    json += "]}";
    return {std::move(text), std::move(json)};
}

Result<std::unique_ptr<FormatWriteGraph>> create_write_graph(std::span<const TensorToWrite> tensors,
                                                             const WriteLayout& layout, std::string target_name,
                                                             DeviceLink* device) {
    (void)layout; // nothing to choose: torch's own layout
    RL_TRY(graph, torch_writer::WriteGraph::create(tensors, std::move(target_name), device));
    return adapt_write_graph(std::move(graph));
}

// torch zip tensors are views that may share and overlap their storages: they load through
// those storages (bindings/cpp/src/load/storage_load.cpp, tensors_view_storages), never as one span
// per tensor, which would refuse shared views and misread strided ones.
Result<FormatLoadGraph> build_tensor_graph(const Index& index, std::vector<TensorDestination> destinations,
                                           const LoadGraphRequest& request) {
    (void)index;
    (void)destinations;
    return fail(errc::unsupported, request.source_name +
                                       ": torch zip tensors are views of storages: they load "
                                       "through their storages, not one span per tensor");
}

constexpr FormatHooks hooks{&detect, &read_index, &describe, &create_write_graph, &build_tensor_graph};
constexpr std::array<std::string_view, 3> extensions{".pt", ".pth", ".bin"};

} // namespace

const Format format{.name = "torch",
                    .title = "torch zip",
                    .extensions = extensions,
                    .stores_hashes = false,
                    .may_be_encrypted = false,
                    .tensors_view_storages = true,
                    .has_data_version = false,
                    .keys_records = false,
                    .tensors_mappable = false,
                    .hooks = &hooks};

} // namespace ringload::torch_zip
