// engine/src/secretbox.cpp
#include "ringload/engine/secretbox.hpp"

#include <sodium.h>

#include <cstring>
#include <mutex>

namespace ringload {
namespace {

void ensure_sodium() {
    static std::once_flag once;
    std::call_once(once, [] {
        // -1 only when no entropy source exists; nothing here works without one.
        RL_ASSERT(sodium_init() >= 0, "libsodium could not initialise (no entropy source?)");
    });
}

} // namespace

SecretKey::SecretKey() {
    ensure_sodium();
    // Best effort: where RLIMIT_MEMLOCK is exhausted the key still works, only swappable.
    (void)sodium_mlock(bytes_.data(), bytes_.size());
}

SecretKey::SecretKey(const SecretKey& other) : SecretKey() {
    bytes_ = other.bytes_;
}

SecretKey& SecretKey::operator=(const SecretKey& other) {
    bytes_ = other.bytes_;
    return *this;
}

SecretKey::~SecretKey() {
    sodium_munlock(bytes_.data(), bytes_.size()); // also zeroes
}

bool SecretKey::operator==(const SecretKey& other) const noexcept {
    return sodium_memcmp(bytes_.data(), other.bytes_.data(), size_bytes) == 0;
}

Result<SecretKey> SecretKey::from_bytes(std::span<const std::byte> bytes) {
    if (bytes.size() != size_bytes) {
        return fail(errc::invalid_argument,
                    "a key must be exactly 32 bytes, this one has " + std::to_string(bytes.size()));
    }
    SecretKey key;
    std::memcpy(key.bytes_.data(), bytes.data(), size_bytes);
    return key;
}

SecretKey SecretKey::random() {
    SecretKey key;
    randombytes_buf(key.bytes_.data(), size_bytes);
    return key;
}

Result<SecretKey> derive_key_argon2id(std::string_view passphrase, const Argon2idParams& params) {
    ensure_sodium();
    if (passphrase.empty()) {
        return fail(errc::invalid_argument, "the passphrase is empty");
    }
    if (params.opslimit < crypto_pwhash_OPSLIMIT_MIN || params.opslimit > crypto_pwhash_OPSLIMIT_MAX ||
        params.memlimit < crypto_pwhash_MEMLIMIT_MIN || params.memlimit > crypto_pwhash_MEMLIMIT_MAX) {
        return fail(errc::invalid_argument, "Argon2id parameters out of range (opslimit " +
                                                std::to_string(params.opslimit) + ", memlimit " +
                                                std::to_string(params.memlimit) + ")");
    }
    SecretKey key;
    if (crypto_pwhash(key.bytes_.data(), SecretKey::size_bytes, passphrase.data(), passphrase.size(),
                      params.salt.data(), params.opslimit, static_cast<std::size_t>(params.memlimit),
                      crypto_pwhash_ALG_ARGON2ID13) != 0) {
        return fail(errc::out_of_memory, "Argon2id key derivation failed (it needs " + std::to_string(params.memlimit) +
                                             " bytes of memory)");
    }
    return key;
}

Nonce random_nonce() {
    ensure_sodium();
    Nonce nonce;
    randombytes_buf(nonce.data(), nonce.size());
    return nonce;
}

std::array<std::uint8_t, 16> random_salt() {
    ensure_sodium();
    std::array<std::uint8_t, 16> salt;
    randombytes_buf(salt.data(), salt.size());
    return salt;
}

Nonce nonce_plus(const Nonce& nonce, std::uint64_t index) noexcept {
    Nonce out = nonce;
    unsigned carry = 0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        unsigned add = i < 8 ? static_cast<unsigned>((index >> (8 * i)) & 0xff) : 0;
        unsigned sum = out[i] + add + carry;
        out[i] = static_cast<std::uint8_t>(sum);
        carry = sum >> 8;
    }
    return out;
}

Mac seal_in_place(std::span<std::byte> data, const Nonce& nonce, const SecretKey& key) noexcept {
    // In place is allowed: libsodium documents c == m as supported.
    return seal_into(data, data, nonce, key);
}

Mac seal_into(std::span<std::byte> ciphertext, std::span<const std::byte> plaintext, const Nonce& nonce,
              const SecretKey& key) noexcept {
    Mac mac;
    crypto_secretbox_detached(reinterpret_cast<unsigned char*>(ciphertext.data()), mac.data(),
                              reinterpret_cast<const unsigned char*>(plaintext.data()), plaintext.size(), nonce.data(),
                              key.data());
    return mac;
}

bool open_in_place(std::span<std::byte> data, const Mac& mac, const Nonce& nonce, const SecretKey& key) noexcept {
    return open_into(data, data, mac, nonce, key);
}

bool open_into(std::span<std::byte> plaintext, std::span<const std::byte> ciphertext, const Mac& mac,
               const Nonce& nonce, const SecretKey& key) noexcept {
    return crypto_secretbox_open_detached(reinterpret_cast<unsigned char*>(plaintext.data()),
                                          reinterpret_cast<const unsigned char*>(ciphertext.data()), mac.data(),
                                          ciphertext.size(), nonce.data(), key.data()) == 0;
}

void wipe_secret(void* data, std::size_t length) noexcept {
    sodium_memzero(data, length);
}

} // namespace ringload
