// io/include/ringload/io/sigv4.hpp
//
// AWS Signature Version 4 (HMAC-SHA256 through OpenSSL) for S3 requests:
//
//     SigV4Request request{"GET", "/bucket/model.tensors", {}, {{"host", "s3.example.com"},
//                          {"range", "bytes=0-9"}, {"x-amz-date", date}, {"x-amz-content-sha256", hash}},
//                          hash};
//     std::string authorization = sigv4_authorization(request, credentials, "us-east-1", "s3", date);
//
// The path is given unencoded and encoded once, segment by segment (S3's rule: no double
// encoding); query parameters are encoded and sorted; every given header is signed (names
// lowercased, values trimmed, inner runs of spaces collapsed). The secret never leaves this
// function but as the signature.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ringload {

struct SigV4Credentials {
    std::string access_key_id;
    std::string secret_access_key;
    std::string session_token; // empty unless temporary credentials (sent as x-amz-security-token)
};

struct SigV4Request {
    std::string method;
    std::string path;                                         // unencoded, starting with '/'
    std::vector<std::pair<std::string, std::string>> query;   // unencoded
    std::vector<std::pair<std::string, std::string>> headers; // those to sign, host included
    std::string payload_sha256_hex;                           // or "UNSIGNED-PAYLOAD"
};

// The pieces, for tests and debugging.
std::string sigv4_canonical_request(const SigV4Request& request);
std::string sigv4_string_to_sign(const SigV4Request& request, const std::string& region, const std::string& service,
                                 const std::string& amz_date);

// "AWS4-HMAC-SHA256 Credential=AKID/20130524/us-east-1/s3/aws4_request, SignedHeaders=..., Signature=..."
std::string sigv4_authorization(const SigV4Request& request, const SigV4Credentials& credentials,
                                const std::string& region, const std::string& service, const std::string& amz_date);

// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters kept, '/' kept when asked.
std::string sigv4_uri_encode(const std::string& text, bool keep_slash);

} // namespace ringload
