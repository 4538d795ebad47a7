// io/src/gcs_jwt.hpp
//
// The signed JWT a service account trades for an access token (RFC 7523, Google's "OAuth 2.0
// for server to server applications"): header {"alg":"RS256","typ":"JWT","kid":KEY_ID}, claims
// {"iss": client_email, "scope": SCOPE, "aud": token_uri, "iat": NOW, "exp": NOW + 3600},
// each base64url-encoded without padding, signed with the account's RSA private key
// (RSASSA-PKCS1-v1_5 with SHA-256, through OpenSSL's EVP interface).
//
//     RL_TRY(jwt, make_gcs_jwt({email, key_pem, key_id}, gcs_read_only_scope, token_uri, now_s, from));
//     // "eyJhbGciOiJSUzI1NiIs...": the assertion= of the token request
//
// Errors name where the key came from (`key_from`), never the key.
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ringload {

inline constexpr std::int64_t gcs_jwt_lifetime_seconds = 3600; // the most Google accepts

struct GcsSigningKey {
    std::string client_email;
    std::string private_key_pem; // a secret: never in a message
    std::string private_key_id;  // the JWT's kid; may be empty
};

// RFC 4648's URL-safe alphabet, no '=' padding (JWS).
std::string base64url(std::span<const std::byte> bytes);
std::string base64url(std::string_view text);

Result<std::string> make_gcs_jwt(const GcsSigningKey& key, std::string_view scope, std::string_view audience,
                                 std::int64_t issued_at_seconds, std::string_view key_from);

} // namespace ringload
