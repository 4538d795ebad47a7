// tests/engine/laned_sha256_test.cpp
//
// LanedSha256 against FIPS 180-2's test vectors and OpenSSL's SHA-256 (Sha256): every length
// around the block and padding edges, any split of a message into updates, and messages of
// unequal lengths hashed together in any grouping.
#include "ringload/engine/laned_sha256.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

namespace ringload {
namespace {

std::span<const std::byte> as_bytes(const std::string& text) {
    return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

std::vector<std::byte> random_bytes(std::size_t count, std::mt19937_64& random) {
    std::vector<std::byte> bytes(count);
    for (std::byte& b : bytes) {
        b = static_cast<std::byte>(random());
    }
    return bytes;
}

std::string hex_of(LanedSha256& hash) {
    const Sha256Digest digest = hash.finish();
    return to_hex(digest);
}

std::string openssl_hex(std::span<const std::byte> bytes) {
    return to_hex(sha256(bytes));
}

TEST(LanedSha256, GivesFipsTestVectors) {
    std::printf("SHA-NI lanes: %s\n", LanedSha256::interleaves() ? "yes" : "no (OpenSSL, one at a time)");
    if (const char* chosen = std::getenv("RINGLOAD_SHA_NI"); chosen != nullptr && std::string(chosen) == "0") {
        EXPECT_FALSE(LanedSha256::interleaves()) << "RINGLOAD_SHA_NI=0 must turn the lanes off";
    }
    LanedSha256 hash;
    EXPECT_EQ(hex_of(hash), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    hash.update(as_bytes("abc"));
    EXPECT_EQ(hex_of(hash), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hash.update(as_bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"));
    EXPECT_EQ(hex_of(hash), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const std::string a_thousand(1000, 'a');
    for (int i = 0; i < 1000; ++i) {
        hash.update(as_bytes(a_thousand));
    }
    EXPECT_EQ(hex_of(hash), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(LanedSha256, AgreesWithOpenSslForEveryLengthSplitAnywhere) {
    std::mt19937_64 random(7);
    const std::vector<std::byte> message = random_bytes(4096 + 300, random);
    std::vector<std::size_t> lengths;
    for (std::size_t n = 0; n <= 300; ++n) {
        lengths.push_back(n);
    }
    lengths.insert(lengths.end(), {511, 512, 513, 4095, 4096, 4096 + 300});
    for (std::size_t length : lengths) {
        const auto whole = std::span<const std::byte>(message).first(length);
        const std::size_t split = length == 0 ? 0 : random() % (length + 1);
        LanedSha256 hash;
        hash.update(whole.first(split));
        hash.update(whole.subspan(split));
        EXPECT_EQ(hex_of(hash), openssl_hex(whole)) << length << " bytes split at " << split;
    }
}

TEST(LanedSha256, MessagesHashedTogetherEachGetTheirOwnDigest) {
    std::mt19937_64 random(11);
    for (std::size_t count = 1; count <= 6; ++count) {
        // Each message arrives in three updates of random lengths (some empty, some ending
        // mid-block), hashed together with the others at each step.
        std::vector<std::vector<std::byte>> messages;
        std::vector<LanedSha256> hashes(count);
        for (std::size_t m = 0; m < count; ++m) {
            messages.push_back(random_bytes(random() % 200000, random));
        }
        std::vector<std::size_t> cut(count, 0);
        for (int step = 0; step < 3; ++step) {
            std::vector<LanedSha256::Update> updates;
            for (std::size_t m = 0; m < count; ++m) {
                const std::size_t left = messages[m].size() - cut[m];
                const std::size_t take = step == 2 ? left : random() % (left + 1);
                updates.push_back({&hashes[m], std::span<const std::byte>(messages[m]).subspan(cut[m], take)});
                cut[m] += take;
            }
            LanedSha256::hash_together(updates);
        }
        for (std::size_t m = 0; m < count; ++m) {
            EXPECT_EQ(hex_of(hashes[m]), openssl_hex(messages[m])) << "message " << m << " of " << count;
        }
    }
}

TEST(LanedSha256, StartsEmptyAgainAfterFinish) {
    LanedSha256 hash;
    hash.update(as_bytes("some bytes first"));
    (void)hash.finish();
    hash.update(as_bytes("abc"));
    EXPECT_EQ(hex_of(hash), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

} // namespace
} // namespace ringload
