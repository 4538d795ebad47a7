// io/src/gcs_source.cpp
#include "ringload/io/gcs_source.hpp"

#include "gcs_access.hpp"
#include "gcs_error.hpp"
#include "ringload/io/http_source.hpp"
#include "ringload/io/source_registry.hpp"

#include <array>

namespace ringload {
namespace {

bool is_gcs_uri(std::string_view uri) {
    return uri.starts_with("gs://");
}

// GCS's JSON error message, and for a refusal what to check.
std::string explain_gcs_error(bool anonymous, unsigned status, std::string_view body) {
    std::string why = gcs_error_summary(body);
    if ((status == 401 || status == 403) && anonymous) {
        why += std::string(why.empty() ? "" : "; ") +
               "anonymous access: give credentials (GOOGLE_APPLICATION_CREDENTIALS or gcs_credentials)";
    }
    return why;
}

Task<Result<std::unique_ptr<Source>>> open_gcs_uri(asio::io_context& loop, std::string uri,
                                                   const NetworkOptions& network) {
    auto opening = open_gcs_source(loop, std::move(uri), network);
    co_return co_await std::move(opening);
}

Task<Result<std::string>> publish_gcs_object(asio::io_context& loop, std::string local_path, std::string uri,
                                             const NetworkOptions& network, const Index&) {
    auto uploading = upload_gcs_object(loop, std::move(local_path), std::move(uri), network);
    co_return co_await std::move(uploading);
}

constexpr std::array gcs_options{
    SourceOption{"gcs_endpoint",
                 "gs://: the endpoint URL (default: STORAGE_EMULATOR_HOST, else https://storage.googleapis.com)"},
    SourceOption{"gcs_credentials",
                 "gs://: a service account's or user's JSON key file (default: GOOGLE_APPLICATION_CREDENTIALS, "
                 "gcloud's application default credentials, the metadata server)"},
    SourceOption{"gcs_anonymous", "gs://: no credentials (public objects), whatever credentials exist", true},
};

} // namespace

const SourceKind gcs_source{
    .name = "gcs",
    .uri_forms = "gs://BUCKET/OBJECT",
    .handles = is_gcs_uri,
    .options = gcs_options,
    .open = open_gcs_uri,
    .publish = publish_gcs_object,
    .publishes_any_file = true,
};

Task<Result<std::unique_ptr<Source>>> open_gcs_source(asio::io_context& loop, std::string uri, NetworkOptions network) {
    RL_CO_TRY(plan, plan_gcs_access(std::move(uri), network, process_environment(), gcs_read_only_scope));
    auto starting = start_gcs_access(loop, std::move(plan));
    RL_CO_TRY(access, co_await std::move(starting));
    HttpSourceOptions http = http_source_options(network);
    http.sign_request = [tokens = access.tokens](Url, std::string, std::string) { return gcs_authorization(tokens); };
    http.explain_error = [anonymous = !access.tokens](unsigned status, std::string_view body) {
        return explain_gcs_error(anonymous, status, body);
    };
    auto opening = open_http_source(loop, gcs_media_url(access.endpoint, access.location), std::move(http));
    auto opened = co_await std::move(opening);
    if (!opened) {
        co_return gcs_failure(access, std::move(opened).error());
    }
    co_return std::move(*opened);
}

} // namespace ringload
