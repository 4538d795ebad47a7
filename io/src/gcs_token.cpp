// io/src/gcs_token.cpp
#include "gcs_token.hpp"

#include "gcs_error.hpp"
#include "gcs_jwt.hpp"
#include "http_connection.hpp"
#include "ringload/io/sigv4.hpp"
#include "tls_context.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <memory>

namespace ringload {
namespace {

using Clock = std::chrono::steady_clock;

// Google's token endpoints answer with an hour; this is what a missing expires_in means.
constexpr std::chrono::seconds default_lifetime{3600};
constexpr std::chrono::seconds refresh_margin_max{300};

// What a fetch needs; shared by the fetcher's copies and the fetches in flight.
struct TokenEndpoint {
    asio::io_context* loop = nullptr;
    GcsCredentials credentials;
    GcsTokenSettings settings;
    Url url;
    std::string url_text;
    std::unique_ptr<asio::ssl::context> tls; // null for http://
};

std::string form_field(std::string_view name, std::string_view value) {
    return std::string(name) + "=" + sigv4_uri_encode(std::string(value), false);
}

// The token request's body (application/x-www-form-urlencoded): a fresh JWT for a service
// account (RFC 7523), the refresh token for a user (RFC 6749 section 6).
Result<std::string> token_form(const TokenEndpoint& endpoint) {
    const GcsCredentials& credentials = endpoint.credentials;
    if (credentials.kind == GcsCredentialKind::authorized_user) {
        return form_field("grant_type", "refresh_token") + "&" + form_field("client_id", credentials.client_id) + "&" +
               form_field("client_secret", credentials.client_secret) + "&" +
               form_field("refresh_token", credentials.refresh_token);
    }
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    const GcsSigningKey key{credentials.client_email, credentials.private_key_pem, credentials.private_key_id};
    RL_TRY(jwt, make_gcs_jwt(key, endpoint.settings.scope, credentials.token_uri,
                             std::chrono::duration_cast<std::chrono::seconds>(now).count(), credentials.from));
    return form_field("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer") + "&" + form_field("assertion", jwt);
}

std::string what_fetch(const TokenEndpoint& endpoint) {
    return endpoint.credentials.kind == GcsCredentialKind::metadata_server
               ? "token request to the metadata server at " + endpoint.url_text
               : "token exchange at " + endpoint.url_text;
}

Task<Result<GcsToken>> fetch_token(std::shared_ptr<const TokenEndpoint> endpoint) {
    std::string form;
    HttpRequest request;
    request.target = endpoint->url.target;
    if (endpoint->credentials.kind == GcsCredentialKind::metadata_server) {
        request.method = "GET";
        request.headers = {{"Metadata-Flavor", "Google"}}; // the metadata server refuses requests without it
    } else {
        RL_CO_TRY(body, token_form(*endpoint));
        form = std::move(body);
        request.method = "POST";
        request.content_type = "application/x-www-form-urlencoded";
        request.body = std::as_bytes(std::span<const char>(form.data(), form.size()));
    }
    HttpConnectionSettings settings;
    settings.timeout = endpoint->settings.timeout;
    settings.insecure = endpoint->settings.insecure;
    settings.explain_error = [](unsigned, std::string_view body) { return gcs_error_summary(body); };
    HttpConnection connection(*endpoint->loop, endpoint->tls.get(), endpoint->url, std::move(settings));
    auto sending = connection.send_with_retries(std::move(request), endpoint->settings.attempts);
    HttpResponse response = co_await std::move(sending);
    if (!response.ok()) {
        co_return fail(errc::io_error, what_fetch(*endpoint) + " failed: " + response.failure);
    }
    co_return parse_gcs_token_response(response.body, Clock::now(), endpoint->url_text);
}

} // namespace

std::chrono::seconds gcs_refresh_margin(std::chrono::seconds lifetime) {
    return std::min(refresh_margin_max, lifetime / 2);
}

Result<GcsToken> parse_gcs_token_response(std::string_view body, Clock::time_point now, const std::string& url) {
    const auto json = nlohmann::json::parse(body, nullptr, false);
    const auto token = json.is_object() ? json.find("access_token") : json.end();
    if (!json.is_object() || token == json.end() || !token->is_string() || token->get<std::string>().empty()) {
        return fail(errc::io_error, url + ": the answer holds no access_token");
    }
    std::chrono::seconds lifetime = default_lifetime;
    if (const auto expires = json.find("expires_in"); expires != json.end() && expires->is_number()) {
        lifetime = std::chrono::seconds(std::max<std::int64_t>(expires->get<std::int64_t>(), 0));
    }
    GcsToken out;
    out.access_token = token->get<std::string>();
    out.expires_at = now + lifetime;
    out.refresh_at = out.expires_at - gcs_refresh_margin(lifetime);
    return out;
}

std::string gcs_token_url(const GcsCredentials& credentials) {
    if (credentials.kind == GcsCredentialKind::metadata_server) {
        return "http://" + credentials.metadata_host + "/computeMetadata/v1/instance/service-accounts/default/token";
    }
    return credentials.token_uri;
}

Result<GcsTokenFetcher> gcs_token_fetcher(asio::io_context& loop, GcsCredentials credentials,
                                          GcsTokenSettings settings) {
    RL_ASSERT(credentials.kind != GcsCredentialKind::anonymous, "anonymous credentials fetch no token");
    auto endpoint = std::make_shared<TokenEndpoint>();
    endpoint->loop = &loop;
    endpoint->url_text = gcs_token_url(credentials);
    auto url = parse_http_url(endpoint->url_text);
    if (!url) {
        return fail(errc::invalid_argument,
                    credentials.from + ": the token URL '" + endpoint->url_text + "' is not an http(s) URL");
    }
    endpoint->url = std::move(*url);
    if (endpoint->url.scheme == "https") {
        RL_TRY(tls, make_client_tls_context(settings.ca_file, settings.insecure));
        endpoint->tls = std::move(tls);
    }
    endpoint->credentials = std::move(credentials);
    endpoint->settings = std::move(settings);
    return GcsTokenFetcher(
        [endpoint = std::shared_ptr<const TokenEndpoint>(std::move(endpoint))] { return fetch_token(endpoint); });
}

GcsTokenCache::GcsTokenCache(asio::io_context& loop, GcsTokenFetcher fetch) : fetch_(std::move(fetch)), fetched_(loop) {
    fetched_.expires_at(asio::steady_timer::time_point::max());
}

Task<Result<std::string>> GcsTokenCache::token() {
    if (token_ && Clock::now() < token_->refresh_at) {
        co_return token_->access_token;
    }
    if (!fetching_) {
        fetching_ = true;
        ++fetches_;
        auto fetching = fetch_();
        auto fetched = co_await std::move(fetching);
        fetching_ = false;
        if (fetched) {
            token_ = std::move(*fetched);
            last_error_.reset();
        } else {
            last_error_ = std::move(fetched).error();
        }
        fetched_.cancel(); // wakes the requests that waited for this fetch
        co_return current_or_error();
    }
    while (fetching_) {
        auto waited = co_await fetched_.async_wait(use_task);
        (void)waited;
    }
    co_return current_or_error();
}

Result<std::string> GcsTokenCache::current_or_error() const {
    const bool usable = token_ && Clock::now() < token_->expires_at;
    if (last_error_ && !usable) {
        return *last_error_;
    }
    if (!token_) {
        return fail(errc::io_error, "no access token");
    }
    return token_->access_token;
}

} // namespace ringload
