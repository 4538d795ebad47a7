// bindings/cpp/include/ringload/crypto_params.hpp
//
// Keys for encrypted tensorizer files, as tensorizer's DecryptionParams / EncryptionParams:
// a raw 32-byte key, or a passphrase stretched with Argon2id (libsodium's crypto_pwhash).
// EncryptionParams are for writing (WriteOptions::encryption, serializer.hpp).
//
//     RL_TRY(decryption, ringload::DecryptionParams::from_passphrase_file("/run/secrets/model-pass"));
//     ringload::OpenOptions options;
//     options.decryption = decryption;
//
// The secret sits in locked memory, is shared (not copied) between copies of these objects,
// is zeroed when the last copy dies, and is never printed. Thread: immutable once made.
#pragma once

#include "ringload/error.hpp"

#include <array>
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

// The cost of deriving a key from a passphrase (Argon2id). tensorizer's defaults
// (OpsLimit.MODERATE, MemLimit.MODERATE): about 0.5 to 1 s and 256 MiB, once per file.
struct PassphraseCost {
    std::uint64_t opslimit = 3;
    std::uint64_t memlimit_bytes = 256 << 20;
};

class EncryptionParams {
public:
    // Exactly 32 bytes.
    static Result<EncryptionParams> from_key(std::span<const std::byte> key);
    // A fresh key from libsodium's generator: save key(), it is the only way to read the file.
    static EncryptionParams random();
    // Derives the key now, with a random salt; the file records the salt and the cost.
    static Result<EncryptionParams> from_passphrase(std::string_view passphrase, PassphraseCost cost = {});
    // With this salt (salt_bytes of them, as tensorizer's from_string(salt=)): the same
    // passphrase, cost and salt give the same key.
    static constexpr std::size_t salt_bytes = 16;
    static Result<EncryptionParams> from_passphrase(std::string_view passphrase, PassphraseCost cost,
                                                    std::span<const std::byte> salt);
    static Result<EncryptionParams> from_key_file(const std::string& path);
    static Result<EncryptionParams> from_passphrase_file(const std::string& path, PassphraseCost cost = {});

    std::span<const std::byte> key() const noexcept;
    const SecretMaterial& secret() const noexcept { return *secret_; }

private:
    explicit EncryptionParams(std::shared_ptr<const SecretMaterial> secret) : secret_(std::move(secret)) {}
    std::shared_ptr<const SecretMaterial> secret_;
};

// How a secret file is read, the one rule for every front end (the CLI's --key-file and
// --passphrase-file, the option table's key_file and passphrase_file, Python's
// DecryptionParams.from_key_file, vLLM's extra config): a key file holds exactly the 32 key
// bytes; a passphrase file the passphrase, one trailing newline ("\n" or "\r\n") dropped, and
// not empty; either at most 64 KiB. Errors name the file. (The from_*_file calls above read
// with these; the caller wipes what it keeps.)
Result<std::array<std::byte, 32>> read_key_file(const std::string& path);
Result<std::string> read_passphrase_file(const std::string& path);

} // namespace ringload
