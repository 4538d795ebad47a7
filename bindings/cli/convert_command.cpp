// bindings/cli/convert_command.cpp
//
// `ringload convert IN OUT [--to tensorizer|safetensors|torch]
//                          [--decrypt-key-file F | --decrypt-passphrase-file F]
//                          [--encrypt-key-file F | --encrypt-passphrase-file F]`:
//                          [--memory-budget BYTES]
// any of the three formats to any other (or to itself: to add, change or remove a tensorizer
// file's encryption), streamed (ringload/convert.hpp): IN's tensors are read in batches just
// ahead of the writer (a tensorizer file's hashes verified unless --verify false) and let go
// once written, so memory holds about the budget, never the model. OUT appears only when
// complete. Without --to, OUT's extension decides (.safetensors; .pt, .pth, .bin; else
// tensorizer). Its flags are the write's rows of the option table (write_option_table: the
// same names and words as Python's convert) and the open rows for IN.
#include "commands.hpp"
#include "open_input.hpp"
#include "progress_bar.hpp"
#include "ringload/io/url.hpp"

#include "ringload/ringload.hpp"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace ringload::cli {
namespace {

struct ConvertArgs {
    std::string input;
    std::string output;
    TableArgs write;   // the write's rows: --to, --verify, the key files, --memory-budget, signing
    TableArgs network; // opening the input, and the network of a remote output
};

double gigabytes_per_second(std::uint64_t bytes, double seconds) {
    return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

int run_convert(const ConvertArgs& args) {
    WriteSettings write;
    if (auto applied = apply_write_options(args.write, write); !applied) {
        return report_error(applied.error().message());
    }
    LoadSettings settings;
    if (auto applied = apply_table_options(args.network, settings); !applied) {
        return report_error(applied.error().message());
    }
    settings.open.decryption = std::move(write.decryption);
    auto opened = open_input(args.input, settings);
    if (!opened) {
        return report_error(opened.error().message());
    }
    ConvertOptions options = std::move(write.convert);
    options.network = settings.open.network;
    ProgressBar bar;
    if (bar.enabled()) {
        options.progress = [&bar](const Progress& progress) { bar.update(progress); };
    }
    const bool encrypted = options.encryption.has_value();
    auto converted = convert(*opened, args.output, options);
    if (!converted) {
        return report_error(converted.error().message());
    }
    const WriteSummary& written = converted->written;
    const Format* written_format = format_named(converted->format);
    const std::string version = written_format != nullptr && written_format->has_data_version
                                    ? ", data version " + std::to_string(written.data_version)
                                    : std::string();
    std::printf("read %s: %s, %zu tensors, %llu bytes in %zu batches (%s), at most %.1f MiB of tensors held\n",
                uri_for_messages(args.input).c_str(), std::string(opened->index().format_name()).c_str(),
                converted->tensors, static_cast<unsigned long long>(converted->bytes_read), converted->batches,
                converted->read_how.empty() ? "nothing to read" : converted->read_how.c_str(),
                static_cast<double>(converted->peak_held_bytes) / (1 << 20));
    std::printf("wrote %s: %s%s%s, %llu bytes in %.3f s (%.2f GB/s, %s)\n", uri_for_messages(args.output).c_str(),
                converted->format.c_str(), version.c_str(), encrypted ? ", encrypted" : "",
                static_cast<unsigned long long>(written.file_bytes), written.seconds,
                gigabytes_per_second(written.file_bytes, written.seconds), written.how.c_str());
    if (!written.signature_file.empty()) {
        std::printf("signed %s: %s (SHA-256 %s)\n", args.output.c_str(), written.signature_file.c_str(),
                    written.sha256_hex.c_str());
    }
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
    add_table_options(*command, args->write, rows_setting({OptionTarget::write}), write_option_table());
    add_table_options(*command, args->network, rows_setting({OptionTarget::open}));
    return [args] { return run_convert(*args); };
}

} // namespace ringload::cli
