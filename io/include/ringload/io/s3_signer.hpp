// io/include/ringload/io/s3_signer.hpp
//
// The headers that make one request to S3 signed (SigV4, service "s3"): x-amz-date,
// x-amz-content-sha256, x-amz-security-token for temporary credentials, and Authorization.
// The request's path and query are read back from the URL it goes to (decoded, then encoded
// once more by the signer, which gives the same text for URLs made by s3_object_url).
//
//     for (auto& [name, value] : s3_request_headers(config, url, "GET", s3_empty_payload_sha256)) {
//         request.set(name, value);
//     }
//
// Anonymous configurations get no headers: the request goes unsigned.
#pragma once

#include "ringload/io/s3_config.hpp"
#include "ringload/io/url.hpp"

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload {

using S3Header = std::pair<std::string, std::string>;

// The SHA-256 of no bytes, the payload hash of a GET.
inline constexpr std::string_view s3_empty_payload_sha256 =
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

std::string s3_payload_sha256(std::span<const std::byte> payload);

// "20130524T000000Z"
std::string s3_amz_date(std::chrono::system_clock::time_point when);

// `extra` are headers the request sends that should be signed too (Content-Type, ...); they are
// not repeated in the result.
std::vector<S3Header> s3_request_headers(const S3Config& config, const Url& url, std::string_view method,
                                         std::string_view payload_sha256_hex, const std::vector<S3Header>& extra = {},
                                         std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

} // namespace ringload
