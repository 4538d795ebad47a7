// io/src/gcs_jwt.cpp
#include "gcs_jwt.hpp"

#include "ringload/engine/openssl_handles.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <nlohmann/json.hpp>

#include <memory>
#include <vector>

namespace ringload {
namespace {

Result<openssl::Key> read_rsa_key(std::string_view pem, std::string_view key_from) {
    openssl::Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    openssl::Key key(bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr);
    // OpenSSL's queued reasons may quote the input: dropped, not passed on.
    ERR_clear_error();
    if (!key || EVP_PKEY_base_id(key.get()) != EVP_PKEY_RSA) {
        return fail(errc::invalid_argument,
                    std::string(key_from) + ": private_key is not an RSA private key in PEM form");
    }
    return key;
}

Result<std::vector<unsigned char>> sign_rs256(EVP_PKEY* key, std::string_view input, std::string_view key_from) {
    openssl::MdContext context(EVP_MD_CTX_new());
    std::size_t length = 0;
    const auto* data = reinterpret_cast<const unsigned char*>(input.data());
    if (!context || EVP_DigestSignInit(context.get(), nullptr, EVP_sha256(), nullptr, key) != 1 ||
        EVP_DigestSign(context.get(), nullptr, &length, data, input.size()) != 1) {
        ERR_clear_error();
        return fail(errc::invalid_argument, std::string(key_from) + ": cannot sign with private_key");
    }
    std::vector<unsigned char> signature(length);
    if (EVP_DigestSign(context.get(), signature.data(), &length, data, input.size()) != 1) {
        ERR_clear_error();
        return fail(errc::invalid_argument, std::string(key_from) + ": cannot sign with private_key");
    }
    signature.resize(length);
    return signature;
}

} // namespace

std::string base64url(std::span<const std::byte> bytes) {
    static constexpr char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    std::uint32_t bits = 0;
    int bit_count = 0;
    for (std::byte b : bytes) {
        bits = (bits << 8) | std::to_integer<std::uint32_t>(b);
        bit_count += 8;
        while (bit_count >= 6) {
            bit_count -= 6;
            out += alphabet[(bits >> bit_count) & 63];
        }
    }
    if (bit_count > 0) {
        out += alphabet[(bits << (6 - bit_count)) & 63];
    }
    return out;
}

std::string base64url(std::string_view text) {
    return base64url(std::as_bytes(std::span<const char>(text.data(), text.size())));
}

Result<std::string> make_gcs_jwt(const GcsSigningKey& key, std::string_view scope, std::string_view audience,
                                 std::int64_t issued_at_seconds, std::string_view key_from) {
    nlohmann::json header = {{"alg", "RS256"}, {"typ", "JWT"}};
    if (!key.private_key_id.empty()) {
        header["kid"] = key.private_key_id;
    }
    const nlohmann::json claims = {
        {"iss", key.client_email},
        {"scope", scope},
        {"aud", audience},
        {"iat", issued_at_seconds},
        {"exp", issued_at_seconds + gcs_jwt_lifetime_seconds},
    };
    const std::string signing_input = base64url(header.dump()) + "." + base64url(claims.dump());
    RL_TRY(rsa_key, read_rsa_key(key.private_key_pem, key_from));
    RL_TRY(signature, sign_rs256(rsa_key.get(), signing_input, key_from));
    return signing_input + "." + base64url(std::as_bytes(std::span<const unsigned char>(signature)));
}

} // namespace ringload
