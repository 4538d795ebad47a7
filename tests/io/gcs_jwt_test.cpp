// tests/io/gcs_jwt_test.cpp
//
// The service account's JWT (io/src/gcs_jwt.hpp): base64url against RFC 4648's vectors; the
// header and claims Google's token endpoint checks; the RS256 signature verified with OpenSSL
// against the public half of a key generated here (and refused once a claim is changed); a key
// that is not an RSA PEM refused with a message naming where it came from and quoting nothing.
#include "gcs_jwt.hpp"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <vector>

namespace ringload {
namespace {

struct KeyFree {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;

std::string pem_of(EVP_PKEY* key) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    EXPECT_EQ(PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr), 1);
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(length));
}

std::string base64url_decode(std::string_view text) {
    static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    std::uint32_t bits = 0;
    int bit_count = 0;
    for (char c : text) {
        const auto value = alphabet.find(c);
        EXPECT_NE(value, std::string::npos) << "not base64url: " << c;
        bits = (bits << 6) | static_cast<std::uint32_t>(value);
        bit_count += 6;
        if (bit_count >= 8) {
            bit_count -= 8;
            out += static_cast<char>((bits >> bit_count) & 0xff);
        }
    }
    return out;
}

std::vector<std::string> split_jwt(const std::string& jwt) {
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (std::size_t dot = jwt.find('.'); dot != std::string::npos; dot = jwt.find('.', start)) {
        parts.push_back(jwt.substr(start, dot - start));
        start = dot + 1;
    }
    parts.push_back(jwt.substr(start));
    return parts;
}

bool verify_rs256(EVP_PKEY* key, const std::string& signing_input, const std::string& signature) {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
    if (EVP_DigestVerifyInit(context.get(), nullptr, EVP_sha256(), nullptr, key) != 1) {
        return false;
    }
    return EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                            reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size()) == 1;
}

TEST(Base64Url, Rfc4648VectorsWithoutPadding) {
    EXPECT_EQ(base64url(std::string_view("")), "");
    EXPECT_EQ(base64url(std::string_view("f")), "Zg");
    EXPECT_EQ(base64url(std::string_view("fo")), "Zm8");
    EXPECT_EQ(base64url(std::string_view("foo")), "Zm9v");
    EXPECT_EQ(base64url(std::string_view("foob")), "Zm9vYg");
    EXPECT_EQ(base64url(std::string_view("fooba")), "Zm9vYmE");
    EXPECT_EQ(base64url(std::string_view("foobar")), "Zm9vYmFy");
    const std::byte url_safe[] = {std::byte{0xfb}, std::byte{0xff}, std::byte{0xbf}};
    EXPECT_EQ(base64url(url_safe), "-_-_");
}

TEST(GcsJwt, ClaimsAndRs256SignatureVerify) {
    Key key(EVP_RSA_gen(2048));
    ASSERT_TRUE(key);
    const GcsSigningKey account{"loader@project.iam.gserviceaccount.com", pem_of(key.get()), "key-1"};
    auto jwt = make_gcs_jwt(account, "https://www.googleapis.com/auth/devstorage.read_only",
                            "https://oauth2.googleapis.com/token", 1'700'000'000, "sa.json");
    ASSERT_TRUE(jwt) << jwt.error().detail;
    const auto parts = split_jwt(*jwt);
    ASSERT_EQ(parts.size(), 3u);
    const auto header = nlohmann::json::parse(base64url_decode(parts[0]));
    EXPECT_EQ(header["alg"], "RS256");
    EXPECT_EQ(header["typ"], "JWT");
    EXPECT_EQ(header["kid"], "key-1");
    const auto claims = nlohmann::json::parse(base64url_decode(parts[1]));
    EXPECT_EQ(claims["iss"], "loader@project.iam.gserviceaccount.com");
    EXPECT_EQ(claims["scope"], "https://www.googleapis.com/auth/devstorage.read_only");
    EXPECT_EQ(claims["aud"], "https://oauth2.googleapis.com/token");
    EXPECT_EQ(claims["iat"], 1'700'000'000);
    EXPECT_EQ(claims["exp"], 1'700'003'600);
    EXPECT_TRUE(verify_rs256(key.get(), parts[0] + "." + parts[1], base64url_decode(parts[2])));

    // Another claim, the same signature: refused.
    auto forged = claims;
    forged["scope"] = "https://www.googleapis.com/auth/cloud-platform";
    EXPECT_FALSE(verify_rs256(key.get(), parts[0] + "." + base64url(forged.dump()), base64url_decode(parts[2])));
    // Another key's signature: refused.
    Key other(EVP_RSA_gen(2048));
    EXPECT_FALSE(verify_rs256(other.get(), parts[0] + "." + parts[1], base64url_decode(parts[2])));
}

TEST(GcsJwt, NoKeyIdNoKid) {
    Key key(EVP_RSA_gen(2048));
    auto jwt = make_gcs_jwt({"a@b", pem_of(key.get()), ""}, "s", "https://t", 1, "sa.json");
    ASSERT_TRUE(jwt);
    EXPECT_FALSE(nlohmann::json::parse(base64url_decode(split_jwt(*jwt)[0])).contains("kid"));
}

TEST(GcsJwt, KeyThatIsNoRsaPemIsRefusedUnquoted) {
    const std::string garbage = "-----BEGIN PRIVATE KEY-----\nTOPSECRETMATERIAL\n-----END PRIVATE KEY-----\n";
    auto refused = make_gcs_jwt({"a@b", garbage, ""}, "s", "https://t", 1, "GOOGLE_APPLICATION_CREDENTIALS (/k.json)");
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::invalid_argument);
    EXPECT_NE(refused.error().detail.find("GOOGLE_APPLICATION_CREDENTIALS (/k.json)"), std::string::npos);
    EXPECT_EQ(refused.error().detail.find("TOPSECRET"), std::string::npos) << refused.error().detail;

    Key ec(EVP_EC_gen("P-256"));
    ASSERT_TRUE(ec);
    auto not_rsa = make_gcs_jwt({"a@b", pem_of(ec.get()), ""}, "s", "https://t", 1, "k.json");
    ASSERT_FALSE(not_rsa);
    EXPECT_NE(not_rsa.error().detail.find("not an RSA private key"), std::string::npos);
}

} // namespace
} // namespace ringload
