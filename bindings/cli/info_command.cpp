// bindings/cli/info_command.cpp
//
// `ringload info URI [--json]`: what a file holds, read from its index alone.
#include "commands.hpp"
#include "open_input.hpp"
#include "tensor_json.hpp"

#include "ringload/ringload.hpp"

#include <cstdio>
#include <iostream>
#include <memory>

namespace ringload::cli {
namespace {

struct InfoArgs {
    std::string uri;
    bool json = false;
    KeyFileArgs keys;
    NetworkArgs network;
};

std::string shape_text(const TensorInfo& tensor) {
    std::string text = "[";
    for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
        text += (i == 0 ? "" : ", ") + std::to_string(tensor.shape[i]);
    }
    return text + "]";
}

std::string flags_text(const Index& index) {
    return index.encrypted ? "encrypted" : "none";
}

// The first line: what kind of file, and what its format records about itself.
std::string format_line(const Index& index) {
    if (index.format == "tensorizer") {
        return "format: tensorizer, data version " + std::to_string(index.data_version) +
               ", feature flags: " + flags_text(index);
    }
    if (index.format == "torch") {
        return "format: torch zip, " + std::to_string(index.storages.size()) + " storages, " +
               (index.big_endian ? "big" : "little") + "-endian";
    }
    return "format: " + index.format + ", " + std::to_string(index.metadata.size()) + " metadata entries";
}

// Where a torch view lies in its storage: "storage 3 +16 stride [1, 4]" (empty for others).
std::string view_text(const Index& index, const TensorInfo& tensor) {
    if (!tensor.storage_index) {
        return "";
    }
    std::string text = "  storage " + index.storages[*tensor.storage_index].key;
    if (tensor.storage_offset != 0) {
        text += " +" + std::to_string(tensor.storage_offset);
    }
    text += " stride [";
    for (std::size_t i = 0; i < tensor.strides.size(); ++i) {
        text += (i == 0 ? "" : ", ") + std::to_string(tensor.strides[i]);
    }
    return text + "]";
}

nlohmann::json storages_json(const Index& index) {
    nlohmann::json storages = nlohmann::json::array();
    for (const auto& storage : index.storages) {
        storages.push_back({{"key", storage.key},
                            {"dtype", std::string(torch_name(storage.dtype))},
                            {"data_offset", storage.data_offset_bytes},
                            {"bytes", storage.byte_length}});
    }
    return storages;
}

int run_info(const InfoArgs& args) {
    auto opened = open_input(args.uri, args.keys, args.network);
    if (!opened) {
        return report_error(opened.error().message());
    }
    const Index& index = opened->index();
    if (args.json) {
        nlohmann::json out;
        out["format"] = index.format;
        out["data_version"] = index.data_version;
        out["feature_flags"] = index.feature_flags;
        out["encrypted"] = index.encrypted;
        out["file_bytes"] = index.source_size_bytes;
        out["tensor_bytes"] = index.total_tensor_bytes();
        if (index.format == "safetensors") {
            nlohmann::json metadata = nlohmann::json::object();
            for (const auto& [key, value] : index.metadata) {
                metadata[key] = value;
            }
            out["metadata"] = std::move(metadata);
        }
        if (index.format == "torch") {
            out["big_endian"] = index.big_endian;
            out["storages"] = storages_json(index);
        }
        out["tensors"] = nlohmann::json::array();
        for (const auto& tensor : index.tensors) {
            nlohmann::json row;
            row["name"] = tensor.name;
            row["path"] = path_json(tensor);
            row["dtype"] = std::string(torch_name(tensor.dtype));
            row["shape"] = shape_json(tensor);
            row["bytes"] = tensor.byte_length;
            row["meta"] = tensor.is_meta;
            row["tensor_type"] = tensor.tensor_type;
            row["data_offset"] = tensor.data_offset_bytes;
            if (tensor.storage_index) {
                // Enough to rebuild the same views (or meta tensors) exactly: which storage,
                // where in it, and how the view steps through it (all in elements).
                row["storage"] = *tensor.storage_index;
                row["storage_offset"] = tensor.storage_offset;
                row["strides"] = tensor.strides;
            }
            out["tensors"].push_back(std::move(row));
        }
        std::cout << dump_json(out) << "\n";
        return 0;
    }
    std::printf("%s\n", format_line(index).c_str());
    for (const auto& [key, value] : index.metadata) {
        std::printf("  metadata %s = %s\n", key.c_str(), value.c_str());
    }
    std::printf("%zu tensors, %llu bytes of tensor data, file %llu bytes\n", index.tensors.size(),
                static_cast<unsigned long long>(index.total_tensor_bytes()),
                static_cast<unsigned long long>(index.source_size_bytes));
    for (const auto& tensor : index.tensors) {
        std::printf("  %-48s %-10s %-20s %12llu%s%s\n", tensor.display_name().c_str(),
                    std::string(torch_name(tensor.dtype)).c_str(), shape_text(tensor).c_str(),
                    static_cast<unsigned long long>(tensor.byte_length), tensor.is_meta ? "  meta" : "",
                    view_text(index, tensor).c_str());
    }
    return 0;
}

} // namespace

Run add_info_command(CLI::App& app) {
    auto args = std::make_shared<InfoArgs>();
    auto* command = app.add_subcommand("info", "Show a file's format, version and tensors");
    command->add_option("uri", args->uri, input_uri_help)->required();
    command->add_flag("--json", args->json, "Print one JSON object");
    add_key_file_options(*command, args->keys, "", "(checked against the file, not needed to show it)");
    add_network_options(*command, args->network);
    return [args] { return run_info(*args); };
}

} // namespace ringload::cli
