// io/src/s3_signer.cpp
#include "ringload/io/s3_signer.hpp"

#include "ringload/io/sigv4.hpp"

#include <openssl/evp.h>

#include <ctime>

namespace ringload {

std::string s3_payload_sha256(std::span<const std::byte> payload) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_Digest(payload.data(), payload.size(), digest, &length, EVP_sha256(), nullptr);
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
        out += digits[digest[i] >> 4];
        out += digits[digest[i] & 15];
    }
    return out;
}

std::string s3_amz_date(std::chrono::system_clock::time_point when) {
    const std::time_t seconds = std::chrono::system_clock::to_time_t(when);
    std::tm utc{};
    ::gmtime_r(&seconds, &utc);
    char text[32];
    std::strftime(text, sizeof text, "%Y%m%dT%H%M%SZ", &utc);
    return text;
}

std::vector<S3Header> s3_request_headers(const S3Config& config, const Url& url, std::string_view method,
                                         std::string_view payload_sha256_hex, const std::vector<S3Header>& extra,
                                         std::chrono::system_clock::time_point now) {
    if (config.anonymous) {
        return {};
    }
    const std::string amz_date = s3_amz_date(now);
    std::vector<S3Header> headers{{"x-amz-date", amz_date}, {"x-amz-content-sha256", std::string(payload_sha256_hex)}};
    if (!config.credentials.session_token.empty()) {
        headers.emplace_back("x-amz-security-token", config.credentials.session_token);
    }

    SigV4Request request;
    request.method = std::string(method);
    const auto question = url.target.find('?');
    request.path = percent_decode(std::string_view(url.target).substr(0, question));
    if (question != std::string::npos) {
        std::string_view query = std::string_view(url.target).substr(question + 1);
        while (!query.empty()) {
            const std::string_view pair = query.substr(0, query.find('&'));
            const auto equals = pair.find('=');
            request.query.emplace_back(percent_decode(pair.substr(0, equals)),
                                       equals == std::string_view::npos ? "" : percent_decode(pair.substr(equals + 1)));
            query.remove_prefix(std::min(query.size(), pair.size() + 1));
        }
    }
    request.headers = headers;
    request.headers.emplace_back("host", url.host_header);
    request.headers.insert(request.headers.end(), extra.begin(), extra.end());
    request.payload_sha256_hex = std::string(payload_sha256_hex);
    headers.emplace_back("Authorization",
                         sigv4_authorization(request, config.credentials, config.region, "s3", amz_date));
    return headers;
}

} // namespace ringload
