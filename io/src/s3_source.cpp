// io/src/s3_source.cpp
#include "ringload/io/s3_source.hpp"

#include "ringload/io/s3_config.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/s3_signer.hpp"
#include "ringload/io/s3_upload.hpp"
#include "ringload/io/source_registry.hpp"

#include <array>

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

bool is_s3_uri(std::string_view uri) {
    return uri.starts_with("s3://");
}

// NetworkOptions::s3 (the C++ API's typed settings), with the option table's s3_* settings
// over the fields they give.
S3Options s3_options_of(const NetworkOptions& network) {
    S3Options s3 = network.s3;
    for (auto [field, name] :
         {std::pair{&S3Options::endpoint, "s3_endpoint"}, std::pair{&S3Options::region, "s3_region"},
          std::pair{&S3Options::profile, "s3_profile"}}) {
        if (const std::string_view value = source_setting(network, name); !value.empty()) {
            s3.*field = std::string(value);
        }
    }
    s3.anonymous = s3.anonymous || source_flag(network, "s3_anonymous");
    return s3;
}

Task<Result<std::unique_ptr<Source>>> open_s3_uri(asio::io_context& loop, std::string uri,
                                                  const NetworkOptions& network) {
    auto opening = open_s3_source(loop, std::move(uri), s3_options_of(network), http_source_options(network));
    co_return co_await std::move(opening);
}

Task<Result<std::string>> publish_s3_object(asio::io_context& loop, std::string local_path, std::string uri,
                                            const NetworkOptions& network, const Index&) {
    NetworkOptions options = network;
    options.s3 = s3_options_of(network);
    auto uploading = upload_s3_object(loop, std::move(local_path), std::move(uri), std::move(options));
    co_return co_await std::move(uploading);
}

constexpr std::array s3_options{
    SourceOption{"s3_endpoint",
                 "s3://: the endpoint URL (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, ~/.s3cfg, AWS)"},
    SourceOption{"s3_region", "s3://: the region (default: AWS_REGION, AWS_DEFAULT_REGION, the profile, us-east-1)"},
    SourceOption{"s3_profile", "s3://: the profile of ~/.aws/credentials and ~/.aws/config (default: AWS_PROFILE)"},
    SourceOption{"s3_anonymous", "s3://: unsigned requests (public buckets), whatever credentials exist", true},
};

} // namespace

const SourceKind s3_source{
    .name = "s3",
    .uri_forms = "s3://BUCKET/KEY",
    .handles = is_s3_uri,
    .options = s3_options,
    .open = open_s3_uri,
    .publish = publish_s3_object,
};

Task<Result<std::unique_ptr<Source>>> open_s3_source(asio::io_context& loop, std::string uri, S3Options s3,
                                                     HttpSourceOptions http) {
    RL_CO_TRY(location, parse_s3_uri(uri));
    auto resolved = resolve_s3_config(s3, process_environment(), location.bucket);
    if (!resolved) {
        co_return with_context(resolved.error(), uri);
    }
    auto config = std::make_shared<const S3Config>(std::move(*resolved));
    const std::string url = s3_object_url(*config, location);
    http.sign_request = [config](Url target, std::string method, std::string /*range: SigV4 here signs no Range*/) {
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
