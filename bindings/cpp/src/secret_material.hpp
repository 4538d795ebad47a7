// bindings/cpp/src/secret_material.hpp
//
// What a DecryptionParams / EncryptionParams holds: a raw key or a passphrase (plus, for
// encryption, the Argon2id parameters). Wiped on destruction.
#pragma once

#include "ringload/crypto_params.hpp"
#include "ringload/engine/secretbox.hpp"

#include <optional>
#include <string>

namespace ringload {

struct SecretMaterial {
    std::optional<SecretKey> key;
    std::string passphrase;
    // EncryptionParams from a passphrase: the key above was derived with these, and every
    // encrypted tensor records them so that readers can derive it again.
    std::optional<Argon2idParams> derivation;

    SecretMaterial() = default;
    SecretMaterial(const SecretMaterial&) = delete;
    SecretMaterial& operator=(const SecretMaterial&) = delete;
    ~SecretMaterial() { wipe_secret(passphrase.data(), passphrase.size()); }
};

// Reads a whole secret file (keys and passphrases are small: refuses more than 64 KiB).
Result<std::string> read_secret_file(const std::string& path, std::string_view what);
// A key file (exactly 32 raw bytes) and a passphrase file (one trailing newline dropped).
Result<SecretKey> key_from_file(const std::string& path);
Result<std::string> passphrase_from_file(const std::string& path);

} // namespace ringload
