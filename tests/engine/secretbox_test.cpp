// tests/engine/secretbox_test.cpp
//
// The crypto wrappers against independent references: libsodium's own sodium_increment for
// the nonce rule, and the key the real tensorizer derived for the passphrase fixture (its
// manifest records it) for Argon2id.
#include "ringload/engine/secretbox.hpp"
#include "../support/test_support.hpp"

#include <gtest/gtest.h>
#include <sodium.h>

namespace ringload {
namespace {

Nonce nonce_from_seed(std::uint32_t seed) {
    std::mt19937 random(seed);
    Nonce nonce;
    for (auto& byte : nonce) {
        byte = static_cast<std::uint8_t>(random());
    }
    return nonce;
}

TEST(Secretbox, NoncePlusMatchesRepeatedSodiumIncrement) {
    ASSERT_GE(sodium_init(), 0);
    for (std::uint32_t seed = 0; seed < 20; ++seed) {
        Nonce start = nonce_from_seed(seed);
        start[0] = 0xf0; // force carries within the first few increments
        start[1] = 0xff;
        Nonce expected = start;
        for (std::uint64_t i = 0; i < 300; ++i) {
            ASSERT_EQ(nonce_plus(start, i), expected) << "seed " << seed << ", index " << i;
            sodium_increment(expected.data(), expected.size());
        }
    }
}

TEST(Secretbox, NoncePlusWrapsModulo2To192) {
    Nonce all_ones;
    all_ones.fill(0xff);
    Nonce zero{};
    EXPECT_EQ(nonce_plus(all_ones, 1), zero);
    Nonce one{};
    one[0] = 1;
    EXPECT_EQ(nonce_plus(all_ones, 2), one);
}

TEST(Secretbox, SealThenOpenRoundTripsAndATamperedChunkIsRefusedUntouched) {
    SecretKey key = SecretKey::random();
    Nonce nonce = random_nonce();
    std::vector<std::byte> plain(5000);
    for (std::size_t i = 0; i < plain.size(); ++i) {
        plain[i] = static_cast<std::byte>(i * 7);
    }
    auto data = plain;
    Mac mac = seal_in_place(data, nonce, key);
    EXPECT_NE(data, plain);

    auto tampered = data;
    tampered[1234] ^= std::byte{1};
    auto before = tampered;
    EXPECT_FALSE(open_in_place(tampered, mac, nonce, key));
    EXPECT_EQ(tampered, before) << "a refused chunk must not be decrypted";
    EXPECT_FALSE(open_in_place(data, mac, nonce_plus(nonce, 1), key)) << "wrong nonce";
    EXPECT_FALSE(open_in_place(data, mac, nonce, SecretKey::random())) << "wrong key";

    ASSERT_TRUE(open_in_place(data, mac, nonce, key));
    EXPECT_EQ(data, plain);
}

// Our XSalsa20-Poly1305 is assembled from parts (Poly1305 from OpenSSL); libsodium's own
// crypto_secretbox is the independent reference, at every length around the 32-byte head and
// Salsa20's 64-byte blocks, and at a whole 2 MiB cipher chunk.
TEST(Secretbox, SealAndOpenAgreeWithLibsodiumsSecretbox) {
    ASSERT_GE(sodium_init(), 0);
    std::mt19937 random(7);
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 200; ++n) {
        lengths.push_back(n);
    }
    for (std::size_t n : {1000u, 4095u, 4096u, 65537u, 2u << 20}) {
        lengths.push_back(n);
    }
    for (std::size_t length : lengths) {
        SecretKey key = SecretKey::random();
        const Nonce nonce = nonce_from_seed(static_cast<std::uint32_t>(length));
        std::vector<std::byte> plain(length);
        for (auto& byte : plain) {
            byte = static_cast<std::byte>(random());
        }
        std::vector<std::byte> ours(length);
        const Mac mac = seal_into(ours, plain, nonce, key);
        // libsodium declares its pointers non-null, even for 0 bytes: one spare byte each.
        std::vector<std::byte> sodiums(length + 1);
        std::vector<std::byte> plain_copy(plain);
        plain_copy.push_back(std::byte{0});
        Mac sodium_mac;
        crypto_secretbox_detached(reinterpret_cast<unsigned char*>(sodiums.data()), sodium_mac.data(),
                                  reinterpret_cast<const unsigned char*>(plain_copy.data()), length, nonce.data(),
                                  key.data());
        sodiums.pop_back();
        ASSERT_EQ(ours, sodiums) << "ciphertext, length " << length;
        ASSERT_EQ(mac, sodium_mac) << "MAC, length " << length;
        std::vector<std::byte> opened(length);
        ASSERT_TRUE(open_into(opened, sodiums, sodium_mac, nonce, key)) << "length " << length;
        ASSERT_EQ(opened, plain) << "length " << length;
    }
}

TEST(Secretbox, KeyFromBytesNeedsExactly32) {
    std::vector<std::byte> short_key(31);
    auto refused = SecretKey::from_bytes(short_key);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::invalid_argument);
    std::vector<std::byte> good(32, std::byte{7});
    EXPECT_TRUE(SecretKey::from_bytes(good));
}

TEST(Secretbox, Argon2idDerivesTheKeyTensorizerDerived) {
    auto manifest = testing::read_json(testing::tensorizer_dir() / "encrypted_passphrase_v3.tensors.json");
    const auto& encryption = manifest["encryption"];
    Argon2idParams params;
    params.opslimit = encryption["opslimit"].get<std::uint64_t>();
    params.memlimit = encryption["memlimit"].get<std::uint64_t>();
    auto salt_hex = encryption["salt_hex"].get<std::string>();
    for (std::size_t i = 0; i < 16; ++i) {
        params.salt[i] = static_cast<std::uint8_t>(std::stoi(salt_hex.substr(2 * i, 2), nullptr, 16));
    }
    auto key = derive_key_argon2id(encryption["passphrase"].get<std::string>(), params);
    ASSERT_TRUE(key) << key.error().message();
    std::string hex;
    for (std::size_t i = 0; i < SecretKey::size_bytes; ++i) {
        char two[3];
        std::snprintf(two, sizeof two, "%02x", key->data()[i]);
        hex += two;
    }
    EXPECT_EQ(hex, encryption["derived_key_hex"].get<std::string>());

    auto empty = derive_key_argon2id("", params);
    ASSERT_FALSE(empty);
    EXPECT_EQ(empty.error().code, errc::invalid_argument);
}

} // namespace
} // namespace ringload
