// io/src/gcs_access.cpp
#include "gcs_access.hpp"

#include "ringload/io/source_registry.hpp"

#include <algorithm>
#include <optional>

namespace ringload {
namespace {

// The metadata server, asked once with a short timeout: its token, or why not.
Task<Result<GcsToken>> probe_metadata_server(asio::io_context& loop, GcsCredentials credentials,
                                             GcsTokenSettings settings) {
    settings.timeout = std::min(settings.timeout, gcs_metadata_probe_timeout);
    settings.attempts = 1;
    RL_CO_TRY(fetch, gcs_token_fetcher(loop, std::move(credentials), std::move(settings)));
    auto fetching = fetch();
    co_return co_await std::move(fetching);
}

} // namespace

Result<GcsAccessPlan> plan_gcs_access(std::string uri, const NetworkOptions& network, const EnvLookup& env,
                                      std::string_view scope) {
    RL_TRY(location, parse_gcs_uri(uri));
    auto endpoint = resolve_gcs_endpoint(source_setting(network, gcs_endpoint_setting), env);
    if (!endpoint) {
        return with_context(endpoint.error(), uri);
    }
    auto credentials = find_gcs_credentials(network, env);
    if (!credentials) {
        return with_context(credentials.error(), uri);
    }
    GcsTokenSettings settings;
    settings.scope = std::string(scope);
    settings.timeout = std::chrono::milliseconds(static_cast<long long>(network.timeout_seconds * 1000));
    settings.attempts = std::max<std::size_t>(network.attempts, 1);
    settings.ca_file = network.ca_file;
    settings.insecure = network.insecure;
    return GcsAccessPlan{std::move(uri), std::move(location), std::move(*endpoint), std::move(*credentials),
                         std::move(settings)};
}

Task<Result<GcsAccess>> start_gcs_access(asio::io_context& loop, GcsAccessPlan plan) {
    GcsAccess access{plan.uri, plan.location, plan.endpoint, plan.credentials.from, nullptr};
    if (plan.credentials.kind == GcsCredentialKind::anonymous) {
        co_return access;
    }
    std::optional<GcsToken> first;
    if (plan.credentials.kind == GcsCredentialKind::metadata_server) {
        auto probing = probe_metadata_server(loop, plan.credentials, plan.token_settings);
        auto probed = co_await std::move(probing);
        if (!probed) {
            // Not on GCE (or no service account there): public objects still load.
            access.credentials_from = "none found, anonymous";
            co_return access;
        }
        first = std::move(*probed);
    }
    auto fetch = gcs_token_fetcher(loop, std::move(plan.credentials), std::move(plan.token_settings));
    if (!fetch) {
        co_return gcs_failure(access, std::move(fetch).error());
    }
    access.tokens = std::make_shared<GcsTokenCache>(loop, std::move(*fetch));
    if (first) {
        access.tokens->keep(std::move(*first));
    }
    co_return access;
}

Task<Result<HttpHeaders>> gcs_authorization(std::shared_ptr<GcsTokenCache> tokens) {
    HttpHeaders headers;
    if (!tokens) {
        co_return headers;
    }
    auto getting = tokens->token();
    RL_CO_TRY(token, co_await std::move(getting));
    headers.emplace_back("Authorization", "Bearer " + token);
    co_return headers;
}

Error gcs_failure(const GcsAccess& access, Error error) {
    error = with_context(std::move(error), access.uri);
    error.detail += " (credentials: " + access.credentials_from + ")";
    return error;
}

} // namespace ringload
