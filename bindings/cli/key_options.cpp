// bindings/cli/key_options.cpp
#include "key_options.hpp"

namespace ringload::cli {

void add_key_file_options(CLI::App& command, KeyFileArgs& args, const std::string& prefix, const std::string& purpose) {
    auto* key =
        command.add_option("--" + prefix + "key-file", args.key_file, "File holding the raw 32-byte key " + purpose);
    auto* passphrase = command.add_option("--" + prefix + "passphrase-file", args.passphrase_file,
                                          "File holding the passphrase " + purpose + " (one trailing newline ignored)");
    key->excludes(passphrase);
}

namespace {

template <class Params>
Result<std::optional<Params>> params_from(const KeyFileArgs& args) {
    if (!args.key_file.empty()) {
        RL_TRY(params, Params::from_key_file(args.key_file));
        return std::optional<Params>(std::move(params));
    }
    if (!args.passphrase_file.empty()) {
        RL_TRY(params, Params::from_passphrase_file(args.passphrase_file));
        return std::optional<Params>(std::move(params));
    }
    return std::optional<Params>();
}

} // namespace

Result<std::optional<DecryptionParams>> decryption_from(const KeyFileArgs& args) {
    return params_from<DecryptionParams>(args);
}

Result<std::optional<EncryptionParams>> encryption_from(const KeyFileArgs& args) {
    return params_from<EncryptionParams>(args);
}

} // namespace ringload::cli
