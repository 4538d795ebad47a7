// formats/tensorizer/crypt_info.hpp
//
// The crypt-info block of an encrypted tensor's header (tensorizer-format.md §9.2):
//
//  [ block_len u64 ][ record_count u16 ]
//     [ record_len u64 ][ type u16 = 1 ][ key derivation: method, opslimit, memlimit, alg, salt ]
//     [ record_len u64 ][ type u16 = 2 ][ chunk_size u64 ][ nonce 24 ][ num_macs u64 ][ MACs ]
//
// and the chunking rule of §9.3: chunk i covers [i * chunk_size, min((i+1) * chunk_size, n)),
// nonce i = initial nonce + i. A single MAC (or a type-3 record) covers the whole data.
#pragma once

#include "ringload/engine/secretbox.hpp"
#include "ringload/error.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ringload::tensorizer {

inline constexpr std::uint64_t default_cipher_chunk_bytes = 2 << 20;

struct KeyDerivationRecord {
    std::uint16_t method = 1;   // 1: libsodium pwhash
    std::int32_t algorithm = 2; // 2: crypto_pwhash_ALG_ARGON2ID13
    Argon2idParams params;
};

struct CipherRecord {
    bool sequential = false; // type 3: one secretbox over the whole data
    std::uint64_t chunk_size_bytes = default_cipher_chunk_bytes;
    Nonce initial_nonce{};
    std::vector<Mac> macs;
};

struct CryptInfo {
    std::optional<KeyDerivationRecord> key_derivation;
    std::optional<CipherRecord> cipher;
    bool encrypted() const noexcept { return cipher.has_value(); }
};

// `block` starts at the block_len field. Checks the layout and the cipher record against the
// tensor's data length (the MAC count, chunk size rules of §9.2).
Result<CryptInfo> parse_crypt_info(std::span<const std::byte> block, std::uint64_t data_length_bytes);

// The block's bytes, block_len first. Its size depends only on which records there are and on
// the MAC count, so a writer can lay a file out with placeholder MACs and patch them later.
std::vector<std::byte> serialize_crypt_info(const CryptInfo& info);

// The cipher chunks of a tensor's data: offsets within the data, and the nonce of each.
struct CipherChunk {
    std::uint64_t offset_bytes = 0;
    std::uint64_t length_bytes = 0;
};
std::size_t cipher_chunk_count(const CipherRecord& cipher, std::uint64_t data_length_bytes);
CipherChunk cipher_chunk(const CipherRecord& cipher, std::uint64_t data_length_bytes, std::size_t index);
// How many chunks tensorizer's rule gives for this length (0 for empty data).
std::size_t cipher_chunk_count_for(std::uint64_t data_length_bytes, std::uint64_t chunk_size_bytes);

} // namespace ringload::tensorizer
