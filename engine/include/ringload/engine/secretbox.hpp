// engine/include/ringload/engine/secretbox.hpp
//
// XSalsa20-Poly1305 (libsodium's crypto_secretbox, detached MACs: XSalsa20 from libsodium,
// Poly1305 from OpenSSL, which is faster), Argon2id key derivation and the key type that holds
// the secret. Formats use these to encrypt and decrypt chunks in place:
//
//     RL_TRY(key, SecretKey::from_bytes(raw));                    // or derive_key_argon2id(...)
//     Nonce nonce = nonce_plus(initial_nonce, chunk_index);       // tensorizer's nonce rule
//     if (!open_in_place(data, mac, nonce, key)) { /* wrong key or corrupted chunk */ }
//
// A SecretKey lives in memory locked against swapping and is zeroed when it dies; it is never
// printed. Thread: any (libsodium is initialised once, thread-safely).
#pragma once

#include "ringload/error.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace ringload {

using Nonce = std::array<std::uint8_t, 24>;
using Mac = std::array<std::uint8_t, 16>;

class SecretKey {
public:
    static constexpr std::size_t size_bytes = 32;

    // Exactly 32 bytes, or errc::invalid_argument.
    static Result<SecretKey> from_bytes(std::span<const std::byte> bytes);
    static SecretKey random();

    SecretKey(const SecretKey& other);
    SecretKey& operator=(const SecretKey& other);
    ~SecretKey();

    const std::uint8_t* data() const noexcept { return bytes_.data(); }
    bool operator==(const SecretKey& other) const noexcept;

private:
    friend Result<SecretKey> derive_key_argon2id(std::string_view passphrase, const struct Argon2idParams& params);
    SecretKey();
    std::array<std::uint8_t, size_bytes> bytes_{};
};

// The key-derivation parameters a tensorizer file stores (libsodium crypto_pwhash).
struct Argon2idParams {
    std::uint64_t opslimit = 3;         // OpsLimit.MODERATE
    std::uint64_t memlimit = 256 << 20; // MemLimit.MODERATE
    std::array<std::uint8_t, 16> salt{};
};

// Argon2id v1.3. Fails with errc::invalid_argument for parameters libsodium refuses and
// errc::out_of_memory when it cannot get memlimit bytes.
Result<SecretKey> derive_key_argon2id(std::string_view passphrase, const Argon2idParams& params);

Nonce random_nonce();
std::array<std::uint8_t, 16> random_salt();

// The nonce for chunk `index`: the 24 bytes read as one little-endian integer, plus index,
// wrapping modulo 2^192 (libsodium's sodium_increment, applied index times).
Nonce nonce_plus(const Nonce& nonce, std::uint64_t index) noexcept;

// Encrypts `data` in place and returns its MAC.
Mac seal_in_place(std::span<std::byte> data, const Nonce& nonce, const SecretKey& key) noexcept;
// Encrypts `plaintext` into `ciphertext` (same size; the same memory, or not overlapping at
// all) and returns its MAC: a writer seals straight from the caller's tensor into a slot.
Mac seal_into(std::span<std::byte> ciphertext, std::span<const std::byte> plaintext, const Nonce& nonce,
              const SecretKey& key) noexcept;
// Checks the MAC first; only then decrypts `data` in place. False (data untouched) on mismatch.
[[nodiscard]] bool open_in_place(std::span<std::byte> data, const Mac& mac, const Nonce& nonce,
                                 const SecretKey& key) noexcept;
// Checks the MAC of `ciphertext`, then decrypts it into `plaintext` (same size; the same memory
// or not overlapping): a reader opens a chunk straight from its slot into the tensor.
[[nodiscard]] bool open_into(std::span<std::byte> plaintext, std::span<const std::byte> ciphertext, const Mac& mac,
                             const Nonce& nonce, const SecretKey& key) noexcept;

// Zeroes memory that held a secret (the compiler may not drop it).
void wipe_secret(void* data, std::size_t length) noexcept;

} // namespace ringload
