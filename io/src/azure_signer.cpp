// io/src/azure_signer.cpp
#include "ringload/io/azure_signer.hpp"

#include "ringload/io/s3_config.hpp" // percent_decode

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <map>

namespace ringload {
namespace {

// The standard headers that have a line of the string-to-sign, in its order.
constexpr std::array<std::string_view, 11> standard_headers{
    "content-encoding",  "content-language", "content-length", "content-md5",         "content-type", "date",
    "if-modified-since", "if-match",         "if-none-match",  "if-unmodified-since", "range"};

std::string lowercase(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string base64(std::string_view bytes) {
    std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0'); // EVP_EncodeBlock writes a NUL too
    const int length =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                        reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    out.resize(static_cast<std::size_t>(length));
    return out;
}

std::string hmac_sha256(std::string_view key, std::string_view message) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
         message.size(), digest, &length);
    return std::string(reinterpret_cast<const char*>(digest), length);
}

// The query's part of the canonicalized resource: "\nname:value" per parameter name.
std::string canonical_query(std::string_view query) {
    std::map<std::string, std::vector<std::string>> parameters;
    while (!query.empty()) {
        const std::string_view pair = query.substr(0, query.find('&'));
        query.remove_prefix(std::min(query.size(), pair.size() + 1));
        if (pair.empty()) {
            continue;
        }
        const auto equals = pair.find('=');
        parameters[lowercase(percent_decode(pair.substr(0, equals)))].push_back(
            equals == std::string_view::npos ? "" : percent_decode(pair.substr(equals + 1)));
    }
    std::string out;
    for (auto& [name, values] : parameters) {
        std::sort(values.begin(), values.end());
        out += "\n" + name + ":";
        for (std::size_t i = 0; i < values.size(); ++i) {
            out += (i == 0 ? "" : ",") + values[i];
        }
    }
    return out;
}

bool is_base64_text(std::string_view text) {
    const auto body_end = text.find_last_not_of('=') + 1;
    if (text.empty() || text.size() % 4 != 0 || text.size() - body_end > 2) {
        return false;
    }
    return std::all_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(body_end),
                       [](unsigned char c) { return std::isalnum(c) != 0 || c == '+' || c == '/'; });
}

} // namespace

std::string azure_rfc1123_date(std::chrono::system_clock::time_point when) {
    static constexpr std::array<const char*, 7> days{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr std::array<const char*, 12> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                        "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
    std::tm utc{};
    ::gmtime_r(&seconds, &utc);
    char text[48];
    std::snprintf(text, sizeof text, "%s, %02d %s %04d %02d:%02d:%02d GMT",
                  days.at(static_cast<std::size_t>(utc.tm_wday)), utc.tm_mday,
                  months.at(static_cast<std::size_t>(utc.tm_mon)), utc.tm_year + 1900, utc.tm_hour, utc.tm_min,
                  utc.tm_sec);
    return text;
}

std::string azure_string_to_sign(std::string_view method, const Url& url, std::string_view account,
                                 const std::vector<AzureHeader>& headers) {
    std::map<std::string, std::string> by_name; // lowercased names, sorted
    for (const auto& [name, value] : headers) {
        by_name[lowercase(name)] = value;
    }
    std::string out = std::string(method) + "\n";
    for (const std::string_view name : standard_headers) {
        const auto found = by_name.find(std::string(name));
        const bool empty = found == by_name.end() || (name == "content-length" && found->second == "0");
        out += (empty ? std::string() : found->second) + "\n";
    }
    for (const auto& [name, value] : by_name) {
        if (name.starts_with("x-ms-")) {
            out += name + ":" + value + "\n";
        }
    }
    const auto question = url.target.find('?');
    out += "/" + std::string(account) + url.target.substr(0, question);
    if (question != std::string::npos) {
        out += canonical_query(std::string_view(url.target).substr(question + 1));
    }
    return out;
}

std::string azure_shared_key_authorization(std::string_view account, std::string_view key,
                                           std::string_view string_to_sign) {
    return "SharedKey " + std::string(account) + ":" + base64(hmac_sha256(key, string_to_sign));
}

std::vector<AzureHeader> azure_request_headers(const AzureConfig& config, const Url& url, std::string_view method,
                                               const std::vector<AzureHeader>& sent,
                                               std::chrono::system_clock::time_point now) {
    std::vector<AzureHeader> headers{{"x-ms-version", std::string(azure_api_version)}};
    if (config.auth != AzureAuth::shared_key) {
        return headers;
    }
    headers.emplace_back("x-ms-date", azure_rfc1123_date(now));
    std::vector<AzureHeader> signed_headers = headers;
    signed_headers.insert(signed_headers.end(), sent.begin(), sent.end());
    const std::string string_to_sign = azure_string_to_sign(method, url, config.account, signed_headers);
    headers.emplace_back("Authorization", azure_shared_key_authorization(config.account, config.key, string_to_sign));
    return headers;
}

std::optional<std::string> azure_decode_key(std::string_view text) {
    if (!is_base64_text(text)) {
        return std::nullopt;
    }
    std::string out(text.size() / 4 * 3 + 1, '\0');
    const int length =
        EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                        reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
    if (length < 0) {
        return std::nullopt;
    }
    // EVP_DecodeBlock counts the bytes that padding stands for as zeros.
    const auto padding = static_cast<std::size_t>(std::count(text.end() - 2, text.end(), '='));
    out.resize(static_cast<std::size_t>(length) - padding);
    return out;
}

} // namespace ringload
