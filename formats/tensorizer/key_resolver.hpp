// formats/tensorizer/key_resolver.hpp
//
// Turns what the caller supplied (a raw key or a passphrase) into the key for each encrypted
// tensor (tensorizer-format.md §9.5). A raw key serves every tensor and ignores key-derivation
// records. A passphrase is stretched with Argon2id using each tensor's stored parameters; one
// key is derived per distinct (opslimit, memlimit, salt) and cached, so a file written in one
// go costs one derivation (0.5-1 s and 256 MiB at tensorizer's defaults).
//
//     KeyResolver keys = KeyResolver::with_passphrase("hunter2");
//     RL_TRY(key, keys.key_for(crypt_info));   // const SecretKey&
//
// Thread: key_for may be called from many workers at once.
#pragma once

#include "formats/tensorizer/crypt_info.hpp"
#include "formats/tensorizer/tensor_header.hpp"
#include "ringload/engine/secretbox.hpp"

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace ringload::tensorizer {

// The crypt info of a tensor read with a key, from its complete header. A tensor with data
// but no cipher record is errc::not_encrypted_key_given (tensorizer: "Tensor is not encrypted,
// but decryption was requested"); one without data (meta) may have an empty block.
Result<CryptInfo> crypt_info_to_decrypt(std::span<const std::byte> header_bytes, const TensorHeader& header,
                                        std::uint64_t data_length_bytes);

class KeyResolver {
public:
    static KeyResolver with_key(SecretKey key);
    static KeyResolver with_passphrase(std::string_view passphrase);
    KeyResolver(KeyResolver&& other) noexcept;
    ~KeyResolver();

    // The key for a tensor with this crypt info. Errors say what is missing or wrong
    // (errc::decryption_failed for a passphrase on a raw-key file, errc::unsupported for an
    // unknown derivation algorithm).
    Result<const SecretKey*> key_for(const CryptInfo& info);

private:
    KeyResolver() = default;
    struct Derived {
        Argon2idParams params;
        std::unique_ptr<SecretKey> key; // stable address while the resolver lives
    };
    std::optional<SecretKey> raw_key_;
    std::string passphrase_; // wiped on destruction
    std::mutex mutex_;       // guards derived_ (derivation runs under it: one at a time)
    std::vector<Derived> derived_;
};

} // namespace ringload::tensorizer
