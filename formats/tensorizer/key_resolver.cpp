// formats/tensorizer/key_resolver.cpp
#include "formats/tensorizer/key_resolver.hpp"

#include <algorithm>

namespace ringload::tensorizer {
namespace {

constexpr std::uint16_t pwhash_method = 1;
constexpr std::int32_t argon2id13_algorithm = 2;

bool same_params(const Argon2idParams& a, const Argon2idParams& b) {
    return a.opslimit == b.opslimit && a.memlimit == b.memlimit && a.salt == b.salt;
}

} // namespace

Result<CryptInfo> crypt_info_to_decrypt(std::span<const std::byte> header_bytes, const TensorHeader& header,
                                        std::uint64_t data_length_bytes) {
    RL_TRY(crypt, parse_crypt_info(header_bytes.subspan(header.crypt_offset_bytes, header.crypt_length_bytes),
                                   data_length_bytes));
    if (!crypt.encrypted() && data_length_bytes > 0) {
        return fail(errc::not_encrypted_key_given, "the tensor is not encrypted, but a key or passphrase was given");
    }
    return crypt;
}

KeyResolver KeyResolver::with_key(SecretKey key) {
    KeyResolver resolver;
    resolver.raw_key_.emplace(std::move(key));
    return resolver;
}

KeyResolver KeyResolver::with_passphrase(std::string_view passphrase) {
    KeyResolver resolver;
    resolver.passphrase_ = std::string(passphrase);
    return resolver;
}

KeyResolver::KeyResolver(KeyResolver&& other) noexcept
    : raw_key_(std::move(other.raw_key_)),
      passphrase_(std::move(other.passphrase_)),
      derived_(std::move(other.derived_)) {}

KeyResolver::~KeyResolver() {
    wipe_secret(passphrase_.data(), passphrase_.size());
}

Result<const SecretKey*> KeyResolver::key_for(const CryptInfo& info) {
    if (raw_key_) {
        return &*raw_key_;
    }
    if (!info.key_derivation) {
        return fail(errc::decryption_failed,
                    "a passphrase was given but the tensor was encrypted with a raw key (it has no key-derivation "
                    "record): supply the key instead");
    }
    const KeyDerivationRecord& record = *info.key_derivation;
    if (record.method != pwhash_method || record.algorithm != argon2id13_algorithm) {
        return fail(errc::unsupported, "key derivation method " + std::to_string(record.method) + " algorithm " +
                                           std::to_string(record.algorithm) + " (only libsodium Argon2id v1.3)");
    }
    std::lock_guard lock(mutex_);
    auto found = std::find_if(derived_.begin(), derived_.end(),
                              [&](const Derived& d) { return same_params(d.params, record.params); });
    if (found != derived_.end()) {
        return found->key.get();
    }
    RL_TRY(key, derive_key_argon2id(passphrase_, record.params));
    derived_.push_back({record.params, std::make_unique<SecretKey>(std::move(key))});
    return derived_.back().key.get();
}

} // namespace ringload::tensorizer
