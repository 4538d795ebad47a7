// bindings/cli/signature_commands.cpp
//
// `ringload verify MODEL --signature F (--public-key F | --certificate-chain F...)
//                  [--ignore-paths P]... [--no-ignore-git-paths] [--threads N] [--json]`
// checks an OpenSSF Model Signing signature of MODEL (a folder or one file): the signature with
// the key or certificates given, then every file's SHA-256 against the signed statement, read on
// every core (ringload/model_signing.hpp). Exit status 0 only when all of it holds.
//
// `ringload sign MODEL --sign-key F --signature F [--ignore-paths P]...` writes one (the key
// method, files mode, SHA-256) that `model_signing verify key` accepts.
#include "commands.hpp"
#include "table_options.hpp"

#include "ringload/model_signing.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace ringload::cli {
namespace {

struct SignatureArgs {
    std::string model;
    TableArgs options; // the option table's signature rows and threads
    std::string sign_key;
    bool json = false;
};

void print_summary(const char* what, const ModelSignatureSummary& summary, bool json) {
    const double rate = summary.seconds > 0 ? static_cast<double>(summary.bytes) / summary.seconds / 1e9 : 0;
    if (json) {
        std::printf("{\"files\":%zu,\"resources\":%zu,\"bytes\":%llu,\"seconds\":%.6f,\"sharded\":%s}\n", summary.files,
                    summary.resources, static_cast<unsigned long long>(summary.bytes), summary.seconds,
                    summary.sharded ? "true" : "false");
        return;
    }
    std::printf("%s %zu files (%zu %s), %llu bytes in %.3f s: %.2f GB/s; signer: %s\n", what, summary.files,
                summary.resources, summary.sharded ? "shards" : "digests",
                static_cast<unsigned long long>(summary.bytes), summary.seconds, rate, summary.signer.c_str());
}

int run_verify(const SignatureArgs& args) {
    LoadSettings settings;
    if (auto applied = apply_table_options(args.options, settings); !applied) {
        return report_error(applied.error().message());
    }
    auto verified = verify_model_signature(args.model, settings.signature);
    if (!verified) {
        return report_error(verified.error().message());
    }
    print_summary("verified", *verified, args.json);
    return 0;
}

int run_sign(const SignatureArgs& args) {
    LoadSettings settings;
    if (auto applied = apply_table_options(args.options, settings); !applied) {
        return report_error(applied.error().message());
    }
    SignatureWrite write;
    write.private_key_file = args.sign_key;
    write.signature_file = settings.signature.signature_file;
    write.ignore_paths = settings.signature.ignore_paths;
    write.ignore_git_paths = settings.signature.ignore_git_paths;
    write.threads = settings.signature.threads;
    auto signed_model = sign_model(args.model, write);
    if (!signed_model) {
        return report_error(signed_model.error().message());
    }
    print_summary("signed", *signed_model, args.json);
    return 0;
}

void add_common(CLI::App& command, SignatureArgs& args, bool trust) {
    command.add_option("model", args.model, "The model: a folder, or one file")->required();
    // `sign` takes what the signature leaves out; `verify` whom to trust too.
    const auto trust_words = {"public_key", "certificate_chain", "trust_root", "identity", "identity_issuer"};
    add_table_options(command, args.options, [trust, trust_words](const OptionRow& row) {
        const bool trust_word = std::find(trust_words.begin(), trust_words.end(), row.name) != trust_words.end();
        return row.name == "threads" || (row.target == OptionTarget::signature && (trust || !trust_word));
    });
    command.get_option("--signature")->required();
    command.add_flag("--json", args.json, "Print one JSON object");
}

} // namespace

Run add_verify_command(CLI::App& app) {
    auto args = std::make_shared<SignatureArgs>();
    auto* command = app.add_subcommand("verify", "Check a model's OpenSSF Model Signing signature, every file read");
    add_common(*command, *args, true);
    return [args] { return run_verify(*args); };
}

Run add_sign_command(CLI::App& app) {
    auto args = std::make_shared<SignatureArgs>();
    auto* command = app.add_subcommand("sign", "Sign a model (OpenSSF Model Signing, the key method)");
    add_common(*command, *args, false);
    command->add_option("--sign-key", args->sign_key, "A PEM ECDSA private key (P-256, P-384 or P-521)")->required();
    return [args] { return run_sign(*args); };
}

} // namespace ringload::cli
