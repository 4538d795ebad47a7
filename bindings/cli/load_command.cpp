// bindings/cli/load_command.cpp
//
// `ringload load URI [--device cpu|cuda|cuda:N] [--dtype T] [--verify] [--filter REGEX] [--sha256]
// [--json]`: loads every (matching) tensor into host or GPU memory and prints a summary, or one
// JSON object. With --sha256 on a GPU, the hashes are of the bytes copied back from the device.
// A folder loads each weight file in it; --signature F (--public-key F | --certificate-chain F)
// verifies a signed model (a folder or one file) in the same read (model_load.hpp).
#include "commands.hpp"
#include "model_load.hpp"
#include "open_input.hpp"
#include "progress_bar.hpp"
#include "tensor_json.hpp"

#include "ringload/printable.hpp"
#include "ringload/ringload.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <regex>

namespace ringload::cli {
namespace {

struct LoadArgs {
    std::string uri;
    bool sha256 = false;
    bool json = false;
    std::string filter;
    // The option table's rows: opening (network, read mode), the load (device, dtype, verify,
    // ring, threads, placement), a key, a signature.
    TableArgs options;
};

void print_json(const LoadedModel& model, const Index& index, bool with_sha256, double open_seconds,
                double first_tensor_seconds) {
    nlohmann::json out;
    out["format"] = std::string(index.format_name());
    out["bytes"] = model.bytes;
    out["seconds"] = model.seconds;
    // Opening: the index read, the ring allocated, pre-faulted and registered. Not in "seconds"
    // (the load); a caller that times open and load together (Python's deserializer) adds it.
    out["open_seconds"] = open_seconds;
    // When the first tensor was handed over (LoadOptions::on_tensor), from the start of the
    // load: `ringload bench load`'s time to first tensor; the whole load for a load of none.
    out["first_tensor_seconds"] = first_tensor_seconds > 0 ? first_tensor_seconds : model.seconds;
    out["device"] = model.device;
    out["how"] = model.how; // the source and how it was read, e.g. "HTTP/2 over TLS, 8 connections x 1 streams"
    if (model.device != "cpu") {
        // As the peers' torch.cuda.max_memory_allocated: `ringload bench load`'s device column.
        out["device_peak_bytes"] = model.device_peak_bytes;
    }
    out["tensors"] = nlohmann::json::array();
    for (const auto& tensor : model.tensors) {
        nlohmann::json row;
        row["name"] = tensor.info.name;
        row["path"] = path_json(tensor.info);
        row["dtype"] = std::string(torch_name(tensor.info.dtype));
        row["shape"] = shape_json(tensor.info);
        if (with_sha256) {
            row["sha256"] = tensor.sha256_hex;
        }
        out["tensors"].push_back(std::move(row));
    }
    std::cout << dump_json(out) << "\n";
}

void print_summary(const LoadedModel& model, bool with_sha256) {
    if (with_sha256) {
        for (const auto& tensor : model.tensors) {
            std::printf("%s  %s\n", tensor.sha256_hex.c_str(), printable(tensor.info.display_name()).c_str());
        }
    }
    double rate = model.seconds > 0 ? static_cast<double>(model.bytes) / model.seconds / 1e9 : 0;
    std::printf("loaded %zu tensors, %llu bytes in %.3f s: %.2f GB/s (%s)\n", model.tensors.size(),
                static_cast<unsigned long long>(model.bytes), model.seconds, rate, model.how.c_str());
}

int run_load(const LoadArgs& args) {
    LoadSettings settings;
    if (auto applied = apply_table_options(args.options, settings); !applied) {
        return report_error(applied.error().message());
    }
    LoadOptions& options = settings.load;
    options.compute_sha256 = args.sha256;
    if (!args.filter.empty()) {
        std::regex pattern;
        try {
            pattern = std::regex(args.filter, std::regex::ECMAScript);
        } catch (const std::regex_error& error) {
            return report_error("--filter '" + args.filter + "' is not a valid regular expression: " + error.what());
        }
        options.filter = [pattern](const TensorInfo& tensor) {
            return std::regex_search(tensor.display_name(), pattern);
        };
    }
    ProgressBar bar;
    if (bar.enabled()) {
        options.progress = [&bar](const Progress& progress) { bar.update(progress); };
    }
    // The true time to the first tensor: when the load hands it over, its bytes final. Set from
    // a worker (the hand-over's calls come one at a time), read after load() returned.
    double first_tensor_seconds = 0;
    std::chrono::steady_clock::time_point load_started;
    if (args.json) {
        options.on_tensor = [&first_tensor_seconds, &load_started](const StreamedTensor&) {
            if (first_tensor_seconds == 0) {
                first_tensor_seconds =
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - load_started).count();
            }
        };
    }
    std::error_code not_folder;
    if (!settings.signature.signature_file.empty() || std::filesystem::is_directory(args.uri, not_folder)) {
        options.on_tensor = nullptr;
        ModelLoad model{args.uri, options, settings.signature, args.json,
                        [&settings](const std::string& file) { return open_input(file, settings); }};
        return run_model_load(model);
    }
    const auto open_started = std::chrono::steady_clock::now();
    auto opened = open_input(args.uri, settings);
    if (!opened) {
        return report_error(opened.error().message());
    }
    const double open_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - open_started).count();
    load_started = std::chrono::steady_clock::now();
    auto loaded = opened->load(options);
    if (!loaded) {
        return report_error(loaded.error().message());
    }
    if (args.json) {
        print_json(*loaded, opened->index(), args.sha256, open_seconds, first_tensor_seconds);
    } else {
        print_summary(*loaded, args.sha256);
    }
    return 0;
}

} // namespace

Run add_load_command(CLI::App& app) {
    auto args = std::make_shared<LoadArgs>();
    auto* command = app.add_subcommand("load", "Load every (matching) tensor into memory");
    command->add_option("uri", args->uri, input_uri_help())->required();
    command->add_option("--filter", args->filter, "Load only tensors whose name matches this regex");
    command->add_flag("--sha256", args->sha256, "Print the SHA-256 of each tensor's bytes as loaded");
    command->add_flag("--json", args->json, "Print one JSON object");
    add_table_options(
        *command, args->options,
        rows_setting({OptionTarget::open, OptionTarget::load, OptionTarget::keys, OptionTarget::signature}));
    return [args] { return run_load(*args); };
}

} // namespace ringload::cli
