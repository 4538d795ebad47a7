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
#include "signature_flags.hpp"

#include "ringload/model_signing.hpp"

#include <cstdio>
#include <memory>

namespace ringload::cli {
namespace {

struct SignatureArgs {
    std::string model;
    SignatureFlags flags;
    std::string sign_key;
    std::size_t threads = 0;
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
    const SignatureCheck check = args.flags.check(args.threads);
    auto verified = verify_model_signature(args.model, check);
    if (!verified) {
        return report_error(verified.error().message());
    }
    print_summary("verified", *verified, args.json);
    return 0;
}

int run_sign(const SignatureArgs& args) {
    SignatureWrite write;
    write.private_key_file = args.sign_key;
    write.signature_file = args.flags.named.signature_file;
    write.ignore_paths = args.flags.named.ignore_paths;
    write.ignore_git_paths = !args.flags.no_git_ignores;
    write.threads = args.threads;
    auto signed_model = sign_model(args.model, write);
    if (!signed_model) {
        return report_error(signed_model.error().message());
    }
    print_summary("signed", *signed_model, args.json);
    return 0;
}

void add_common(CLI::App& command, SignatureArgs& args, bool trust) {
    command.add_option("model", args.model, "The model: a folder, or one file")->required();
    add_signature_flags(command, args.flags, true, trust);
    command.add_option("--threads", args.threads, "Hashing threads (0: one per core)");
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
