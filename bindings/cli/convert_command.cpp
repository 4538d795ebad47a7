// bindings/cli/convert_command.cpp
//
// `ringload convert IN OUT [--to tensorizer|safetensors|torch]
//                          [--decrypt-key-file F | --decrypt-passphrase-file F]
//                          [--encrypt-key-file F | --encrypt-passphrase-file F]`:
// any of the three formats to any other (or to itself: to add, change or remove a tensorizer
// file's encryption). Loads IN into host memory (a tensorizer file's hashes verified unless
// --verify false), then writes OUT through the engine; OUT appears only when complete.
// Without --to, OUT's extension decides (.safetensors; .pt, .pth, .bin; else tensorizer).
#include "commands.hpp"
#include "open_input.hpp"
#include "progress_bar.hpp"
#include "ringload/io/url.hpp"

#include "ringload/ringload.hpp"

#include <cstdio>
#include <memory>

namespace ringload::cli {
namespace {

struct ConvertArgs {
    std::string input;
    std::string output;
    std::string to; // empty: from OUT's extension
    bool verify = true;
    KeyFileArgs decrypt;
    KeyFileArgs encrypt;
    NetworkArgs network; // for an http(s) input
};

double gigabytes_per_second(std::uint64_t bytes, double seconds) {
    return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

std::string target_format(const ConvertArgs& args) {
    if (!args.to.empty()) {
        return args.to;
    }
    const std::string& out = args.output;
    const auto ends_with = [&](std::string_view suffix) { return out.ends_with(suffix); };
    if (ends_with(".safetensors")) {
        return "safetensors";
    }
    if (ends_with(".pt") || ends_with(".pth") || ends_with(".bin")) {
        return "torch";
    }
    return "tensorizer";
}

Result<WriteSummary> write_as(const std::string& format, const std::string& output,
                              std::span<const TensorToWrite> tensors, WriteOptions options) {
    if (format == "safetensors") {
        SafetensorsWriteOptions safetensors_options;
        safetensors_options.progress = std::move(options.progress);
        return write_safetensors(output, tensors, safetensors_options);
    }
    if (format == "torch") {
        return write_torch(output, tensors, options);
    }
    return write_tensorizer(output, tensors, options);
}

int run_convert(const ConvertArgs& args) {
    auto encryption = encryption_from(args.encrypt);
    if (!encryption) {
        return report_error(encryption.error().message());
    }
    const std::string format = target_format(args);
    if (*encryption && format != "tensorizer") {
        return report_error("invalid argument: " + args.output + ": only tensorizer files can be encrypted (" + format +
                            " has no encryption)");
    }
    auto opened = open_input(args.input, args.decrypt, args.network);
    if (!opened) {
        return report_error(opened.error().message());
    }
    ProgressBar bar;
    LoadOptions load_options;
    load_options.verify_hashes = args.verify && opened->index().format == "tensorizer"; // others store none
    if (bar.enabled()) {
        load_options.progress = [&bar](const Progress& progress) { bar.update(progress); };
    }
    auto loaded = opened->load(load_options);
    if (!loaded) {
        return report_error(loaded.error().message());
    }

    const auto tensors = tensors_to_write(*loaded);
    WriteOptions write_options;
    write_options.encryption = std::move(*encryption);
    ProgressBar write_bar;
    if (write_bar.enabled()) {
        write_options.progress = [&write_bar](const Progress& progress) { write_bar.update(progress); };
    }
    write_options.network = network_options(args.network);
    const bool encrypted = write_options.encryption.has_value();
    auto written = write_as(format, args.output, tensors, std::move(write_options));
    if (!written) {
        return report_error(written.error().message());
    }
    std::printf("read %s: %zu tensors, %llu bytes in %.3f s (%.2f GB/s, %s)\n", uri_for_messages(args.input).c_str(),
                loaded->tensors.size(), static_cast<unsigned long long>(loaded->bytes), loaded->seconds,
                gigabytes_per_second(loaded->bytes, loaded->seconds), loaded->how.c_str());
    const std::string version =
        format == "tensorizer" ? ", data version " + std::to_string(written->data_version) : std::string();
    std::printf("wrote %s: %s%s%s, %llu bytes in %.3f s (%.2f GB/s, %s)\n", uri_for_messages(args.output).c_str(),
                format.c_str(), version.c_str(), encrypted ? ", encrypted" : "",
                static_cast<unsigned long long>(written->file_bytes), written->seconds,
                gigabytes_per_second(written->file_bytes, written->seconds), written->how.c_str());
    return 0;
}

} // namespace

Run add_convert_command(CLI::App& app) {
    auto args = std::make_shared<ConvertArgs>();
    auto* command = app.add_subcommand(
        "convert",
        "Rewrite a file in another format (tensorizer, safetensors, torch), or re-encrypt a tensorizer file");
    command->add_option("input", args->input, "File or URL to read (any of the three formats)")->required();
    command->add_option("output", args->output, "File to write (replaced only when complete)")->required();
    command->add_option("--to", args->to, "Output format (default: from OUT's extension, else tensorizer)")
        ->check(CLI::IsMember({"tensorizer", "safetensors", "torch"}));
    command->add_option("--verify", args->verify, "Check the input's stored hashes (true/false, default true)");
    add_key_file_options(*command, args->decrypt, "decrypt-", "to decrypt the input with");
    add_key_file_options(*command, args->encrypt, "encrypt-", "to encrypt the output with");
    add_network_options(*command, args->network);
    return [args] { return run_convert(*args); };
}

} // namespace ringload::cli
