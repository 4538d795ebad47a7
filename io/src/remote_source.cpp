// io/src/remote_source.cpp
#include "ringload/io/remote_source.hpp"

#include "ringload/io/http2_source.hpp"
#include "ringload/io/redis_source.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/s3_source.hpp"

#include <chrono>

namespace ringload {

bool is_remote_uri(std::string_view uri) {
    for (std::string_view scheme : {"http://", "https://", "s3://", "redis://"}) {
        if (uri.starts_with(scheme)) {
            return true;
        }
    }
    return false;
}

namespace {

HttpSourceOptions http_source_options(const NetworkOptions& options) {
    HttpSourceOptions http;
    http.connections = options.connections;
    http.timeout = std::chrono::milliseconds(static_cast<long long>(options.timeout_seconds * 1000));
    http.attempts = options.attempts;
    http.ca_file = options.ca_file;
    http.insecure = options.insecure;
    // http(s) URLs are often presigned S3 URLs (or CDN redirects to them): their refusals carry
    // S3's XML "Code: Message" ("AccessDenied: Request has expired"); other bodies say nothing.
    http.explain_error = [](unsigned, std::string_view body) { return s3_error_summary(body); };
    if (options.range_size_bytes != 0) {
        http.range_size_bytes = options.range_size_bytes;
    }
    return http;
}

} // namespace

Task<Result<std::unique_ptr<Source>>> open_remote_source(asio::io_context& loop, std::string uri,
                                                         const NetworkOptions& options) {
    if (uri.starts_with("redis://")) {
        auto opening = open_redis_source(loop, std::move(uri), options); // the URI may hold a password
        co_return co_await std::move(opening);
    }
    if (options.range_size_bytes % 4096 != 0) {
        co_return fail(errc::invalid_argument, uri + ": the range size must be a multiple of 4096 bytes, not " +
                                                   std::to_string(options.range_size_bytes));
    }
    if (uri.starts_with("http://") || uri.starts_with("https://")) {
        const bool tls = uri.starts_with("https://");
        // http://: HTTP/1.1 unless asked (h2c needs prior knowledge); https://: ALPN decides.
        const bool try_http2 =
            options.http_version == HttpVersion::http2 || (tls && options.http_version == HttpVersion::automatic);
        if (try_http2) {
            Http2SourceOptions http2;
            http2.streams_per_connection = options.streams_per_connection;
            // automatic: the HTTP/2 source hands over to HTTP/1.1 when ALPN chooses it (or the
            // server ignores Range over HTTP/2).
            http2.allow_http1 = options.http_version == HttpVersion::automatic;
            auto opening = open_http2_source(loop, std::move(uri), http_source_options(options), http2);
            co_return co_await std::move(opening);
        }
        auto opening = open_http_source(loop, std::move(uri), http_source_options(options));
        co_return co_await std::move(opening);
    }
    if (uri.starts_with("s3://")) {
        auto opening = open_s3_source(loop, std::move(uri), options.s3, http_source_options(options));
        co_return co_await std::move(opening);
    }
    const std::string scheme = uri.substr(0, uri.find(':'));
    co_return fail(errc::unsupported, uri + ": " + scheme + " sources are not available in this version");
}

} // namespace ringload
