// engine/src/secretbox.cpp
#include "ringload/engine/secretbox.hpp"

#include <openssl/evp.h>
#include <sodium.h>

#include <algorithm>
#include <cstring>
#include <memory>
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

// Poly1305 over `bytes` with a one-time key. OpenSSL's (AVX2 code) runs 6.1 GB/s on one core
// here, libsodium 1.0.18's (SSE2) 2.6: with XSalsa20 at 2.5 that takes opening a chunk from 1.16
// to about 1.7 GB/s. libsodium's stays as the fallback should OpenSSL refuse (never seen).
void poly1305(std::uint8_t* tag, std::span<const std::byte> bytes, const std::uint8_t* one_time_key) noexcept {
    static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "POLY1305", nullptr);
    struct FreeContext {
        void operator()(EVP_MAC_CTX* context) const noexcept { EVP_MAC_CTX_free(context); }
    };
    thread_local std::unique_ptr<EVP_MAC_CTX, FreeContext> context(mac != nullptr ? EVP_MAC_CTX_new(mac) : nullptr);
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    std::size_t tag_length = 0;
    if (context && EVP_MAC_init(context.get(), one_time_key, 32, nullptr) == 1 &&
        EVP_MAC_update(context.get(), data, bytes.size()) == 1 &&
        EVP_MAC_final(context.get(), tag, &tag_length, crypto_onetimeauth_poly1305_BYTES) == 1 &&
        tag_length == crypto_onetimeauth_poly1305_BYTES) {
        return;
    }
    crypto_onetimeauth_poly1305(tag, data, bytes.size(), one_time_key);
}

// crypto_secretbox_xsalsa20poly1305, built from its parts (NaCl's construction, byte for byte):
// subkey = HSalsa20(key, nonce[0..16)); the Salsa20 keystream under subkey and nonce[16..24)
// gives the Poly1305 key (its bytes 0..32) and is XORed with the message from its byte 32 on;
// the MAC covers the ciphertext. Only so that Poly1305 can come from OpenSSL.
class ChunkCipher {
public:
    ChunkCipher(const Nonce& nonce, const SecretKey& key) noexcept : nonce_(nonce) {
        crypto_core_hsalsa20(subkey_, nonce.data(), key.data(), nullptr);
        crypto_stream_salsa20(block0_, sizeof block0_, salsa_nonce(), subkey_);
    }
    ~ChunkCipher() {
        sodium_memzero(subkey_, sizeof subkey_);
        sodium_memzero(block0_, sizeof block0_);
    }
    ChunkCipher(const ChunkCipher&) = delete;
    ChunkCipher& operator=(const ChunkCipher&) = delete;

    // out = in XOR keystream[32..): in place or not overlapping.
    void apply_stream(std::byte* out, const std::byte* in, std::size_t length) const noexcept {
        const std::size_t head = std::min<std::size_t>(length, 32);
        for (std::size_t i = 0; i < head; ++i) {
            out[i] = in[i] ^ static_cast<std::byte>(block0_[32 + i]);
        }
        if (length > head) {
            crypto_stream_salsa20_xor_ic(reinterpret_cast<unsigned char*>(out + head),
                                         reinterpret_cast<const unsigned char*>(in + head), length - head,
                                         salsa_nonce(), 1, subkey_);
        }
    }
    Mac mac_of(std::span<const std::byte> ciphertext) const noexcept {
        Mac mac;
        poly1305(mac.data(), ciphertext, block0_);
        return mac;
    }

private:
    const std::uint8_t* salsa_nonce() const noexcept { return nonce_.data() + 16; }

    const Nonce& nonce_;
    std::uint8_t subkey_[crypto_core_hsalsa20_OUTPUTBYTES];
    std::uint8_t block0_[64];
};

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
    const ChunkCipher cipher(nonce, key);
    cipher.apply_stream(ciphertext.data(), plaintext.data(), plaintext.size());
    return cipher.mac_of(ciphertext.first(plaintext.size()));
}

bool open_in_place(std::span<std::byte> data, const Mac& mac, const Nonce& nonce, const SecretKey& key) noexcept {
    return open_into(data, data, mac, nonce, key);
}

bool open_into(std::span<std::byte> plaintext, std::span<const std::byte> ciphertext, const Mac& mac,
               const Nonce& nonce, const SecretKey& key) noexcept {
    const ChunkCipher cipher(nonce, key);
    const Mac computed = cipher.mac_of(ciphertext);
    if (crypto_verify_16(computed.data(), mac.data()) != 0) {
        return false; // nothing written: a chunk that fails stays as it was
    }
    cipher.apply_stream(plaintext.data(), ciphertext.data(), ciphertext.size());
    return true;
}

void wipe_secret(void* data, std::size_t length) noexcept {
    sodium_memzero(data, length);
}

} // namespace ringload
