// tests/formats/tensorizer_crypt_info_test.cpp
//
// The crypt-info block against the bytes the real tensorizer wrote (encrypted_passphrase_v3,
// tensor 0, the worked example of tensorizer-format.md §9.2), the chunking rule of §9.3, and
// malformed blocks.
#include "../support/test_support.hpp"
#include "formats/tensorizer/crypt_info.hpp"

#include <gtest/gtest.h>

namespace ringload::tensorizer {
namespace {

constexpr std::size_t fixture_block_offset = 0x40095;
constexpr std::size_t fixture_block_bytes = 8 + 118;
constexpr std::uint64_t fixture_data_length = 80;

std::vector<std::byte> fixture_block() {
    auto file = testing::read_file(testing::tensorizer_dir() / "encrypted_passphrase_v3.tensors");
    auto begin = file.begin() + static_cast<long>(fixture_block_offset);
    return {begin, begin + static_cast<long>(fixture_block_bytes)};
}

TEST(TensorizerCryptInfo, ParsesTheRealLibrarysBlock) {
    auto block = fixture_block();
    auto info = parse_crypt_info(block, fixture_data_length);
    ASSERT_TRUE(info) << info.error().message();
    ASSERT_TRUE(info->key_derivation);
    EXPECT_EQ(info->key_derivation->method, 1);
    EXPECT_EQ(info->key_derivation->algorithm, 2);
    EXPECT_EQ(info->key_derivation->params.opslimit, 3u);
    EXPECT_EQ(info->key_derivation->params.memlimit, 268435456u);
    EXPECT_EQ(info->key_derivation->params.salt[0], 0x56);
    EXPECT_EQ(info->key_derivation->params.salt[15], 0x68);
    ASSERT_TRUE(info->cipher);
    EXPECT_FALSE(info->cipher->sequential);
    EXPECT_EQ(info->cipher->chunk_size_bytes, 2097152u);
    EXPECT_EQ(info->cipher->initial_nonce[0], 0x7a);
    ASSERT_EQ(info->cipher->macs.size(), 1u);
    EXPECT_EQ(info->cipher->macs[0][0], 0x7d);
}

TEST(TensorizerCryptInfo, SerializesByteForByteAsTheRealLibrary) {
    auto block = fixture_block();
    auto info = parse_crypt_info(block, fixture_data_length);
    ASSERT_TRUE(info);
    EXPECT_EQ(serialize_crypt_info(*info), block);
}

TEST(TensorizerCryptInfo, EmptyBlockIsNotEncrypted) {
    CryptInfo empty;
    auto bytes = serialize_crypt_info(empty);
    std::vector<std::byte> expected = {std::byte{2}, {}, {}, {}, {}, {}, {}, {}, {}, {}};
    EXPECT_EQ(bytes, expected); // §9.2: block_len 2, record_count 0
    auto parsed = parse_crypt_info(bytes, 0);
    ASSERT_TRUE(parsed);
    EXPECT_FALSE(parsed->encrypted());
}

TEST(TensorizerCryptInfo, ChunksFollowTheSpec) {
    CipherRecord cipher;
    cipher.chunk_size_bytes = 2 << 20;
    const std::uint64_t length = (2 << 20) + 4096; // encrypted_key_v3's large tensor
    cipher.macs.resize(2);
    ASSERT_EQ(cipher_chunk_count(cipher, length), 2u);
    EXPECT_EQ(cipher_chunk(cipher, length, 1).offset_bytes, 2u << 20);
    EXPECT_EQ(cipher_chunk(cipher, length, 1).length_bytes, 4096u);
    EXPECT_EQ(cipher_chunk_count_for(4u << 20, 2 << 20), 2u); // exact multiples: only full chunks
    cipher.macs.resize(1); // one MAC: one secretbox over everything, whatever chunk_size says
    EXPECT_EQ(cipher_chunk_count(cipher, length), 1u);
    EXPECT_EQ(cipher_chunk(cipher, length, 0).length_bytes, length);
}

TEST(TensorizerCryptInfo, MalformedBlocksAreErrors) {
    auto block = fixture_block();
    // Truncated anywhere.
    for (std::size_t cut = 0; cut < block.size(); ++cut) {
        std::vector<std::byte> cut_block(block.begin(), block.begin() + static_cast<long>(cut));
        EXPECT_FALSE(parse_crypt_info(cut_block, fixture_data_length)) << "cut at " << cut;
    }
    // A MAC count that does not fit the data length (80 bytes in 64-byte chunks needs 2).
    CryptInfo info = parse_crypt_info(block, fixture_data_length).value();
    info.cipher->chunk_size_bytes = 1024;
    info.cipher->macs.resize(3);
    auto wrong_count = serialize_crypt_info(info);
    auto parsed = parse_crypt_info(wrong_count, 4096); // 4096 / 1024 = 4 chunks, 3 MACs
    ASSERT_FALSE(parsed);
    EXPECT_EQ(parsed.error().code, errc::format_error);
    // A chunk size that is not a multiple of 64.
    info.cipher->chunk_size_bytes = 1000;
    info.cipher->macs.resize(1);
    EXPECT_FALSE(parse_crypt_info(serialize_crypt_info(info), fixture_data_length));
}

} // namespace
} // namespace ringload::tensorizer
