// io/src/sigv4.cpp
#include "ringload/io/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace ringload {
namespace {

std::string hex(const unsigned char* bytes, std::size_t length) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < length; ++i) {
        out += digits[bytes[i] >> 4];
        out += digits[bytes[i] & 15];
    }
    return out;
}

std::string sha256_hex(const std::string& text) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(text.data(), text.size(), digest, &length, EVP_sha256(), nullptr);
    return hex(digest, length);
}

std::string hmac_sha256(const std::string& key, const std::string& message) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
         message.size(), digest, &length);
    return std::string(reinterpret_cast<const char*>(digest), length);
}

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

// Leading and trailing spaces dropped, inner runs of spaces made one.
std::string trimmed(const std::string& value) {
    std::string out;
    bool space = false;
    for (char c : value) {
        if (c == ' ' || c == '\t') {
            space = !out.empty();
            continue;
        }
        if (space) {
            out += ' ';
            space = false;
        }
        out += c;
    }
    return out;
}

// Lowercased names, sorted; values of repeated names joined by ','.
std::map<std::string, std::string> canonical_headers(const SigV4Request& request) {
    std::map<std::string, std::string> headers;
    for (const auto& [name, value] : request.headers) {
        auto& joined = headers[lowercase(name)];
        joined += (joined.empty() ? "" : ",") + trimmed(value);
    }
    return headers;
}

std::string signed_header_names(const std::map<std::string, std::string>& headers) {
    std::string names;
    for (const auto& [name, value] : headers) {
        names += (names.empty() ? "" : ";") + name;
    }
    return names;
}

std::string date_of(const std::string& amz_date) {
    return amz_date.substr(0, 8);
}

} // namespace

std::string sigv4_uri_encode(const std::string& text, bool keep_slash) {
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : text) {
        if (std::isalnum(c) != 0 || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
            out += static_cast<char>(c);
        } else {
            out += '%';
            out += digits[c >> 4];
            out += digits[c & 15];
        }
    }
    return out;
}

std::string sigv4_canonical_request(const SigV4Request& request) {
    std::vector<std::pair<std::string, std::string>> query;
    for (const auto& [key, value] : request.query) {
        query.emplace_back(sigv4_uri_encode(key, false), sigv4_uri_encode(value, false));
    }
    std::sort(query.begin(), query.end());
    std::string query_text;
    for (const auto& [key, value] : query) {
        query_text += (query_text.empty() ? "" : "&") + key + "=" + value;
    }
    const auto headers = canonical_headers(request);
    std::string header_text;
    for (const auto& [name, value] : headers) {
        header_text += name + ":" + value + "\n";
    }
    return request.method + "\n" + sigv4_uri_encode(request.path, true) + "\n" + query_text + "\n" + header_text +
           "\n" + signed_header_names(headers) + "\n" + request.payload_sha256_hex;
}

std::string sigv4_string_to_sign(const SigV4Request& request, const std::string& region, const std::string& service,
                                 const std::string& amz_date) {
    return "AWS4-HMAC-SHA256\n" + amz_date + "\n" + date_of(amz_date) + "/" + region + "/" + service +
           "/aws4_request\n" + sha256_hex(sigv4_canonical_request(request));
}

std::string sigv4_authorization(const SigV4Request& request, const SigV4Credentials& credentials,
                                const std::string& region, const std::string& service, const std::string& amz_date) {
    std::string key = hmac_sha256("AWS4" + credentials.secret_access_key, date_of(amz_date));
    key = hmac_sha256(key, region);
    key = hmac_sha256(key, service);
    key = hmac_sha256(key, "aws4_request");
    const std::string signature = hmac_sha256(key, sigv4_string_to_sign(request, region, service, amz_date));
    return "AWS4-HMAC-SHA256 Credential=" + credentials.access_key_id + "/" + date_of(amz_date) + "/" + region + "/" +
           service + "/aws4_request, SignedHeaders=" + signed_header_names(canonical_headers(request)) +
           ", Signature=" + hex(reinterpret_cast<const unsigned char*>(signature.data()), signature.size());
}

} // namespace ringload
