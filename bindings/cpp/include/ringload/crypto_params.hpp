// bindings/cpp/include/ringload/crypto_params.hpp
//
// Keys for encrypted tensorizer files, as tensorizer's DecryptionParams / EncryptionParams:
// a raw 32-byte key, or a passphrase stretched with Argon2id (libsodium's crypto_pwhash).
//
//     RL_TRY(decryption, ringload::DecryptionParams::from_passphrase_file("/run/secrets/model-pass"));
//     ringload::OpenOptions options;
//     options.decryption = decryption;
//
// The secret sits in locked memory, is shared (not copied) between copies of these objects,
// is zeroed when the last copy dies, and is never printed. Thread: immutable once made.
#pragma once

#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace ringload {

struct SecretMaterial; // defined in the library

class DecryptionParams {
public:
    // Exactly 32 bytes.
    static Result<DecryptionParams> from_key(std::span<const std::byte> key);
    // Non-empty; the key comes from each tensor's stored Argon2id parameters.
    static Result<DecryptionParams> from_passphrase(std::string_view passphrase);
    // A file holding exactly the 32 key bytes.
    static Result<DecryptionParams> from_key_file(const std::string& path);
    // A file holding the passphrase (UTF-8). One trailing newline ("\n" or "\r\n"), as editors
    // and `echo` add, is not part of it.
    static Result<DecryptionParams> from_passphrase_file(const std::string& path);

    const SecretMaterial& secret() const noexcept { return *secret_; }

private:
    explicit DecryptionParams(std::shared_ptr<const SecretMaterial> secret) : secret_(std::move(secret)) {}
    std::shared_ptr<const SecretMaterial> secret_;
};

} // namespace ringload
