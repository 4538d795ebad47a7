// io/src/s3_source.cpp
#include "ringload/io/s3_source.hpp"

#include "ringload/io/s3_config.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/s3_signer.hpp"

namespace ringload {
namespace {

// The HTTP source's signing hook for S3: SigV4 headers for a range GET (no body: the payload
// hash is that of no bytes). Credentials are static here; a refresh over the network (STS, IMDS)
// would be awaited in this coroutine.
Task<Result<std::vector<HttpSourceOptions::Header>>> sign_s3_get(std::shared_ptr<const S3Config> config, Url url,
                                                                 std::string method) {
    co_return s3_request_headers(*config, url, method, s3_empty_payload_sha256);
}

// The HTTP source's error-body hook for S3: the XML body's "Code: Message", and for a 301 (S3's
// answer, without a Location, to a request sent to another region's endpoint) what to check.
std::string explain_s3_error(const std::string& region, unsigned status, std::string_view body) {
    std::string why = s3_error_summary(body);
    if (status == 301) {
        why += std::string(why.empty() ? "" : "; ") + "is the bucket in another region than " + region +
               "? set AWS_REGION or the endpoint";
    }
    return why;
}

} // namespace

Task<Result<std::unique_ptr<Source>>> open_s3_source(asio::io_context& loop, std::string uri, S3Options s3,
                                                     HttpSourceOptions http) {
    RL_CO_TRY(location, parse_s3_uri(uri));
    auto resolved = resolve_s3_config(s3, process_environment(), location.bucket);
    if (!resolved) {
        co_return with_context(resolved.error(), uri);
    }
    auto config = std::make_shared<const S3Config>(std::move(*resolved));
    const std::string url = s3_object_url(*config, location);
    http.sign_request = [config](Url target, std::string method) {
        return sign_s3_get(config, std::move(target), std::move(method));
    };
    http.explain_error = [region = config->region](unsigned status, std::string_view body) {
        return explain_s3_error(region, status, body);
    };
    auto opening = open_http_source(loop, url, std::move(http));
    auto opened = co_await std::move(opening);
    if (!opened) {
        Error error = with_context(opened.error(), uri);
        error.detail += " (credentials: " + config->credentials_from + ")";
        co_return error;
    }
    co_return std::move(*opened);
}

} // namespace ringload
