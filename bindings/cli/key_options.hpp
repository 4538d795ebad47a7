// bindings/cli/key_options.hpp
//
// `--key-file F` / `--passphrase-file F` for commands that read encrypted files. Secrets come
// only from files (never the command line, where `ps` and shell history would see them).
#pragma once

#include "ringload/crypto_params.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace ringload::cli {

struct KeyFileArgs {
    std::string key_file;
    std::string passphrase_file;
};

// Registers the two (mutually exclusive) options under `prefix` ("" or "decrypt-"/"encrypt-").
void add_key_file_options(CLI::App& command, KeyFileArgs& args, const std::string& prefix, const std::string& purpose);

// Nothing when neither option was given.
Result<std::optional<DecryptionParams>> decryption_from(const KeyFileArgs& args);
// For writing: a passphrase's key is derived here (Argon2id, tensorizer's default cost).
Result<std::optional<EncryptionParams>> encryption_from(const KeyFileArgs& args);

} // namespace ringload::cli
