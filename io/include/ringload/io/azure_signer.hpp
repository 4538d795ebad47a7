// io/include/ringload/io/azure_signer.hpp
//
// The headers of one request to Azure Blob Storage: x-ms-version on every request, and with
// Shared Key x-ms-date and Authorization, "SharedKey ACCOUNT:" + base64(HMAC-SHA256(key,
// string-to-sign)) with the base64-decoded account key (Azure's "Authorize with Shared Key").
//
//     std::vector<AzureHeader> sent{{"Range", "bytes=0-8388607"}};
//     for (auto& [name, value] : azure_request_headers(config, url, "GET", sent)) {
//         request.set(name, value);
//     }
//
// The string-to-sign, line by line:
//     VERB, Content-Encoding, Content-Language, Content-Length ("" for 0), Content-MD5,
//     Content-Type, Date, If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since, Range
//     x-ms-* headers as "name:value", names lowercased and sorted
//     /ACCOUNT + the URL's path as sent (percent-encoded; an emulator's path-style path
//     repeats the account: /acct/acct/container/blob)
//     "\nname:value" per query parameter: names lowercased, values decoded, sorted, the values of
//     a repeated name sorted and joined by ','
// The Range line holds the Range header the request sends: the service signs that header
// (Azure's SDK sends x-ms-range instead and leaves the line empty; both are the same rule).
// Header names sort ordinally; the service's own collation orders the x-ms-* names sent here
// the same way. Anonymous and SAS requests get x-ms-version alone.
#pragma once

#include "ringload/io/azure_config.hpp"
#include "ringload/io/url.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload {

using AzureHeader = std::pair<std::string, std::string>;

// The REST API version asked for (x-ms-version).
inline constexpr std::string_view azure_api_version = "2021-08-06";

// "Mon, 27 May 2013 01:02:03 GMT" (RFC 1123), whatever the process's locale.
std::string azure_rfc1123_date(std::chrono::system_clock::time_point when);

// `headers`: those the request sends, standard and x-ms-* (others are not signed).
std::string azure_string_to_sign(std::string_view method, const Url& url, std::string_view account,
                                 const std::vector<AzureHeader>& headers);

// "SharedKey ACCOUNT:SIGNATURE" for `key` (decoded bytes).
std::string azure_shared_key_authorization(std::string_view account, std::string_view key,
                                           std::string_view string_to_sign);

// The headers to add to a request that also sends `sent` (Range, Content-Type, ...: signed, not
// repeated in the result).
std::vector<AzureHeader> azure_request_headers(
    const AzureConfig& config, const Url& url, std::string_view method, const std::vector<AzureHeader>& sent = {},
    std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// An account key's bytes; nullopt when `text` is not base64 (padded, standard alphabet).
std::optional<std::string> azure_decode_key(std::string_view text);

} // namespace ringload
