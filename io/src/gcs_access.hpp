// io/src/gcs_access.hpp
//
// What a gs:// read and a gs:// upload share: the object's location, the endpoint, and the
// access token cache of the credentials found (gcs_credentials.hpp), or none for anonymous
// access. When nothing but the metadata server is left, it is asked for a token once, with a
// short timeout: a token makes it the credentials' source (and the first token is kept), no
// answer means anonymous access ("credentials: none found, anonymous").
//
//     RL_TRY(plan, plan_gcs_access(uri, network, process_environment(), gcs_read_only_scope));
//     auto starting = start_gcs_access(loop, std::move(plan));
//     RL_CO_TRY(access, co_await std::move(starting));
//     http.sign_request = ... gcs_authorization(access.tokens) ...;   // Authorization: Bearer ...
//
// Thread: the loop thread.
#pragma once

#include "gcs_credentials.hpp"
#include "gcs_token.hpp"
#include "gcs_uri.hpp"
#include "http_connection.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace ringload {

// How long the metadata server has to answer when it is only a guess.
inline constexpr std::chrono::milliseconds gcs_metadata_probe_timeout{1'000};

// What is known before any request: no network yet.
struct GcsAccessPlan {
    std::string uri;
    GcsLocation location;
    std::string endpoint;
    GcsCredentials credentials;
    GcsTokenSettings token_settings;
};

struct GcsAccess {
    std::string uri;
    GcsLocation location;
    std::string endpoint;
    std::string credentials_from;
    std::shared_ptr<GcsTokenCache> tokens; // null: anonymous
};

Result<GcsAccessPlan> plan_gcs_access(std::string uri, const NetworkOptions& network, const EnvLookup& env,
                                      std::string_view scope);

Task<Result<GcsAccess>> start_gcs_access(asio::io_context& loop, GcsAccessPlan plan);

// The headers that authorise a request: Authorization: Bearer TOKEN, or none for anonymous
// access. An error when no token can be had.
Task<Result<HttpHeaders>> gcs_authorization(std::shared_ptr<GcsTokenCache> tokens);

// `error` as a gs:// failure: prefixed with the URI, with where the credentials came from.
Error gcs_failure(const GcsAccess& access, Error error);

} // namespace ringload
