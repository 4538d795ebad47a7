// bindings/cli/convert_command.cpp
//
// `ringload convert IN OUT [--decrypt-key-file F | --decrypt-passphrase-file F]
//                          [--encrypt-key-file F | --encrypt-passphrase-file F]`:
// tensorizer -> tensorizer, to add, change or remove encryption. Loads IN into host memory
// (hashes verified unless --verify false), then writes OUT through the engine; OUT appears only
// when complete.
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
    bool verify = true;
    KeyFileArgs decrypt;
    KeyFileArgs encrypt;
    NetworkArgs network; // for an http(s) input
};

double gigabytes_per_second(std::uint64_t bytes, double seconds) {
    return seconds > 0 ? static_cast<double>(bytes) / seconds / 1e9 : 0;
}

int run_convert(const ConvertArgs& args) {
    auto encryption = encryption_from(args.encrypt);
    if (!encryption) {
        return report_error(encryption.error().message());
    }
    auto opened = open_input(args.input, args.decrypt, args.network);
    if (!opened) {
        return report_error(opened.error().message());
    }
    ProgressBar bar;
    LoadOptions load_options;
    load_options.verify_hashes = args.verify;
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
    auto written = write_tensorizer(args.output, tensors, write_options);
    if (!written) {
        return report_error(written.error().message());
    }
    std::printf("read %s: %zu tensors, %llu bytes in %.3f s (%.2f GB/s, %s)\n", uri_for_messages(args.input).c_str(),
                loaded->tensors.size(), static_cast<unsigned long long>(loaded->bytes), loaded->seconds,
                gigabytes_per_second(loaded->bytes, loaded->seconds), loaded->how.c_str());
    std::printf("wrote %s: data version %u%s, %llu bytes in %.3f s (%.2f GB/s, %s)\n",
                uri_for_messages(args.output).c_str(), written->data_version,
                write_options.encryption ? ", encrypted" : "", static_cast<unsigned long long>(written->file_bytes),
                written->seconds, gigabytes_per_second(written->file_bytes, written->seconds), written->how.c_str());
    return 0;
}

} // namespace

Run add_convert_command(CLI::App& app) {
    auto args = std::make_shared<ConvertArgs>();
    auto* command = app.add_subcommand("convert", "Rewrite a tensorizer file: add, change or remove encryption");
    command->add_option("input", args->input, "Tensorizer file to read")->required();
    command->add_option("output", args->output, "Tensorizer file to write (replaced only when complete)")->required();
    command->add_option("--verify", args->verify, "Check the input's stored hashes (true/false, default true)");
    add_key_file_options(*command, args->decrypt, "decrypt-", "to decrypt the input with");
    add_key_file_options(*command, args->encrypt, "encrypt-", "to encrypt the output with");
    add_network_options(*command, args->network);
    return [args] { return run_convert(*args); };
}

} // namespace ringload::cli
