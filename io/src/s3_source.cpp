// io/src/s3_source.cpp
#include "ringload/io/s3_source.hpp"

#include "ringload/io/s3_config.hpp"
#include "ringload/io/s3_signer.hpp"

namespace ringload {

Task<Result<std::unique_ptr<Source>>> open_s3_source(asio::io_context& loop, std::string uri, S3Options s3,
                                                     HttpSourceOptions http) {
    auto location = parse_s3_uri(uri);
    if (!location) {
        co_return location.error();
    }
    auto resolved = resolve_s3_config(s3, process_environment(), location->bucket);
    if (!resolved) {
        co_return with_context(resolved.error(), uri);
    }
    auto config = std::make_shared<const S3Config>(std::move(*resolved));
    const std::string url = s3_object_url(*config, *location);
    // Range GETs have no body: the payload hash is that of no bytes, signed.
    http.request_headers = [config](const Url& target, std::string_view method) {
        return s3_request_headers(*config, target, method, s3_empty_payload_sha256);
    };
    auto opening = open_http_source(loop, url, std::move(http));
    auto opened = co_await std::move(opening);
    if (!opened) {
        Error error = with_context(opened.error(), uri);
        if (error.detail.find("HTTP 301") != std::string::npos) {
            // S3's answer to a request sent to another region's endpoint (no Location).
            error.detail +=
                " (is the bucket in another region than " + config->region + "? set AWS_REGION or the endpoint)";
        }
        error.detail += " (credentials: " + config->credentials_from + ")";
        co_return error;
    }
    co_return std::move(*opened);
}

} // namespace ringload
