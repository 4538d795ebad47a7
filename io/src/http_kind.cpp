// io/src/http_kind.cpp
//
// http:// and https:// as a registered source: which of the two HTTP sources opens a URL.
#include "ringload/io/http2_source.hpp"
#include "ringload/io/http_source.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/source_registry.hpp"

namespace ringload {
namespace {

bool is_http_url(std::string_view uri) {
    return uri.starts_with("http://") || uri.starts_with("https://");
}

Task<Result<std::unique_ptr<Source>>> open_http_url(asio::io_context& loop, std::string uri,
                                                    const NetworkOptions& network) {
    HttpSourceOptions http = http_source_options(network);
    // http(s) URLs are often presigned S3 URLs (or CDN redirects to them): their refusals carry
    // S3's XML "Code: Message" ("AccessDenied: Request has expired"); other bodies say nothing.
    http.explain_error = [](unsigned, std::string_view body) { return s3_error_summary(body); };
    const bool tls = uri.starts_with("https://");
    // http://: HTTP/1.1 unless asked (h2c needs prior knowledge); https://: ALPN decides.
    // A cache's version check (open_without_reading) asks with an HTTP/1.1 HEAD where the server
    // may speak either.
    const bool try_http2 = network.http_version == HttpVersion::http2 ||
                           (tls && network.http_version == HttpVersion::automatic && !network.open_without_reading);
    if (try_http2) {
        Http2SourceOptions http2;
        http2.streams_per_connection = network.streams_per_connection;
        // automatic: the HTTP/2 source hands over to HTTP/1.1 when ALPN chooses it (or the
        // server ignores Range over HTTP/2).
        http2.allow_http1 = network.http_version == HttpVersion::automatic;
        auto opening = open_http2_source(loop, std::move(uri), std::move(http), http2);
        co_return co_await std::move(opening);
    }
    auto opening = open_http_source(loop, std::move(uri), std::move(http));
    co_return co_await std::move(opening);
}

} // namespace

// Read-only: a plain web server has no upload protocol that ringload could rely on.
const SourceKind http_source{
    .name = "http",
    .uri_forms = "http://HOST/PATH, https://HOST/PATH",
    .handles = is_http_url,
    .options = {},
    .open = open_http_url,
};

} // namespace ringload
