// io/src/gcs_token.hpp
//
// The access token every request of a gs:// source or upload carries, fetched once and shared:
// a service account's JWT traded at its token_uri, a user's refresh token traded there, or the
// metadata server's token (gcs_credentials.hpp says which). A token is replaced 5 minutes before
// it expires (or halfway through its life when that is shorter), and only one fetch is in flight
// at a time: the requests that need a token meanwhile wait for that fetch. A failed fetch while
// the old token is still valid keeps the old one.
//
//     auto fetch = gcs_token_fetcher(loop, credentials, {.scope = gcs_read_only_scope, ...});
//     auto tokens = std::make_shared<GcsTokenCache>(loop, std::move(fetch));
//     auto getting = tokens->token();
//     Result<std::string> token = co_await std::move(getting);   // "ya29...."
//
// Errors name the token URL and the credentials' source, never a token, key or secret.
// Thread: the loop thread.
#pragma once

#include "gcs_credentials.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ringload {

inline constexpr std::string_view gcs_read_only_scope = "https://www.googleapis.com/auth/devstorage.read_only";
inline constexpr std::string_view gcs_read_write_scope = "https://www.googleapis.com/auth/devstorage.read_write";

struct GcsToken {
    std::string access_token; // a secret
    std::chrono::steady_clock::time_point expires_at;
    std::chrono::steady_clock::time_point refresh_at; // expires_at less gcs_refresh_margin
};

// How long before it expires a token of `lifetime` is replaced.
std::chrono::seconds gcs_refresh_margin(std::chrono::seconds lifetime);

// A token endpoint's or the metadata server's answer: {"access_token", "expires_in", ...}.
// `url` names the endpoint in the error (which never quotes the answer: it may hold a token).
Result<GcsToken> parse_gcs_token_response(std::string_view body, std::chrono::steady_clock::time_point now,
                                          const std::string& url);

// Where `credentials` get their tokens: token_uri, or the metadata server's token URL.
std::string gcs_token_url(const GcsCredentials& credentials);

struct GcsTokenSettings {
    std::string scope;
    std::chrono::milliseconds timeout{30'000};
    std::size_t attempts = 6;
    std::string ca_file; // https token endpoints: CAs besides the system's
    bool insecure = false;
};

using GcsTokenFetcher = std::function<Task<Result<GcsToken>>()>;

// Fetches a token over the network for `credentials` (not anonymous), retrying connection
// failures and 429/5xx up to settings.attempts.
Result<GcsTokenFetcher> gcs_token_fetcher(asio::io_context& loop, GcsCredentials credentials,
                                          GcsTokenSettings settings);

class GcsTokenCache {
public:
    GcsTokenCache(asio::io_context& loop, GcsTokenFetcher fetch);

    // The current token; fetched first when there is none or it is due for replacement.
    Task<Result<std::string>> token();
    // A token got another way (the metadata server's probe), used until due.
    void keep(GcsToken token) { token_ = std::move(token); }
    std::size_t fetches() const { return fetches_; }

private:
    Result<std::string> current_or_error() const;

    GcsTokenFetcher fetch_;
    std::optional<GcsToken> token_;
    std::optional<Error> last_error_; // of the last fetch, when it failed
    bool fetching_ = false;
    std::size_t fetches_ = 0;
    asio::steady_timer fetched_; // never expires: cancelled to wake the waiters when a fetch ends
};

} // namespace ringload
