// tests/io/gcs_token_test.cpp
//
// The gs:// token cache (io/src/gcs_token.hpp) with a fake fetcher: requests that need a token
// at once share one fetch; a token is replaced when due (5 minutes before it expires, or halfway
// through a short life); a failed fetch keeps a still-valid token and otherwise fails the request.
// Token answers parsed without quoting them. And the metadata server, when it is only a guess and
// nothing answers, leaves anonymous access (io/src/gcs_access.hpp).
#include "gcs_token.hpp"
#include "gcs_access.hpp"

#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

namespace ringload {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct FakeTokens {
    std::size_t calls = 0;
    std::chrono::seconds lifetime{3600};
    bool failing = false;
};

// One fetch: a 10 ms wait (so that other requests come while it is in flight), then "tN".
Task<Result<GcsToken>> fake_fetch(FakeTokens* fake) {
    const std::size_t call = ++fake->calls;
    auto executor = co_await asio::this_coro::executor;
    asio::steady_timer timer(executor, 10ms);
    auto waited = co_await timer.async_wait(use_task);
    (void)waited;
    if (fake->failing) {
        co_return fail(errc::io_error, "token exchange at http://t/token failed: HTTP 503");
    }
    GcsToken token;
    token.access_token = "t" + std::to_string(call);
    token.expires_at = Clock::now() + fake->lifetime;
    token.refresh_at = token.expires_at - gcs_refresh_margin(fake->lifetime);
    co_return token;
}

Task<void> get_token(GcsTokenCache* cache, std::vector<std::string>* got) {
    auto getting = cache->token();
    auto token = co_await std::move(getting);
    got->push_back(token ? *token : "error: " + token.error().detail);
}

std::vector<std::string> get_tokens(asio::io_context& loop, GcsTokenCache& cache, std::size_t requests) {
    std::vector<std::string> got;
    for (std::size_t i = 0; i < requests; ++i) {
        asio::co_spawn(loop, get_token(&cache, &got), asio::detached);
    }
    loop.restart();
    loop.run();
    return got;
}

TEST(GcsTokenCache, RequestsAtOnceShareOneFetch) {
    asio::io_context loop;
    FakeTokens fake;
    GcsTokenCache cache(loop, [&fake] { return fake_fetch(&fake); });
    EXPECT_EQ(get_tokens(loop, cache, 8), std::vector<std::string>(8, "t1"));
    EXPECT_EQ(fake.calls, 1u);
    EXPECT_EQ(get_tokens(loop, cache, 3), std::vector<std::string>(3, "t1")); // still fresh: no fetch
    EXPECT_EQ(cache.fetches(), 1u);
}

TEST(GcsTokenCache, DueTokensAreReplaced) {
    asio::io_context loop;
    FakeTokens fake;
    fake.lifetime = 0s; // due at once: every request after a fetch fetches again
    GcsTokenCache cache(loop, [&fake] { return fake_fetch(&fake); });
    EXPECT_EQ(get_tokens(loop, cache, 4), std::vector<std::string>(4, "t1"));
    EXPECT_EQ(get_tokens(loop, cache, 1), std::vector<std::string>{"t2"});
    EXPECT_EQ(fake.calls, 2u);
}

TEST(GcsTokenCache, FailedFetchKeepsAValidTokenElseFails) {
    asio::io_context loop;
    FakeTokens fake;
    fake.failing = true;
    GcsTokenCache cache(loop, [&fake] { return fake_fetch(&fake); });
    const auto failed = get_tokens(loop, cache, 2);
    ASSERT_EQ(failed.size(), 2u);
    EXPECT_EQ(failed[0], "error: token exchange at http://t/token failed: HTTP 503");
    EXPECT_EQ(failed[1], failed[0]);

    GcsToken due; // due for replacement, not expired
    due.access_token = "old";
    due.refresh_at = Clock::now() - 1s;
    due.expires_at = Clock::now() + 60s;
    cache.keep(due);
    EXPECT_EQ(get_tokens(loop, cache, 1), std::vector<std::string>{"old"});
}

TEST(GcsTokens, RefreshMarginIsFiveMinutesOrHalfALife) {
    EXPECT_EQ(gcs_refresh_margin(3600s), 300s);
    EXPECT_EQ(gcs_refresh_margin(400s), 200s);
    EXPECT_EQ(gcs_refresh_margin(0s), 0s);
}

TEST(GcsTokens, AnswersParsedNeverQuoted) {
    const auto now = Clock::now();
    auto token = parse_gcs_token_response(R"({"access_token":"ya29.x","expires_in":3599,"token_type":"Bearer"})", now,
                                          "https://oauth2.googleapis.com/token");
    ASSERT_TRUE(token) << token.error().detail;
    EXPECT_EQ(token->access_token, "ya29.x");
    EXPECT_EQ(token->expires_at, now + 3599s);
    EXPECT_EQ(token->refresh_at, now + 3299s);
    auto no_lifetime = parse_gcs_token_response(R"({"access_token":"ya29.y"})", now, "u");
    ASSERT_TRUE(no_lifetime);
    EXPECT_EQ(no_lifetime->expires_at, now + 3600s);
    auto refused = parse_gcs_token_response(R"({"id_token":"SECRET-ID-TOKEN"})", now, "https://t/token");
    ASSERT_FALSE(refused);
    EXPECT_NE(refused.error().detail.find("https://t/token"), std::string::npos);
    EXPECT_EQ(refused.error().detail.find("SECRET"), std::string::npos);
}

TEST(GcsTokens, TokenUrls) {
    GcsCredentials metadata;
    metadata.kind = GcsCredentialKind::metadata_server;
    metadata.metadata_host = "127.0.0.1:9";
    EXPECT_EQ(gcs_token_url(metadata), "http://127.0.0.1:9/computeMetadata/v1/instance/service-accounts/default/token");
    GcsCredentials account;
    account.kind = GcsCredentialKind::service_account;
    account.token_uri = "https://oauth2.googleapis.com/token";
    EXPECT_EQ(gcs_token_url(account), "https://oauth2.googleapis.com/token");
}

// A port nothing listens on: bound, then closed.
std::string closed_port() {
    asio::io_context loop;
    asio::ip::tcp::acceptor acceptor(loop, {asio::ip::make_address("127.0.0.1"), 0});
    return std::to_string(acceptor.local_endpoint().port());
}

TEST(GcsAccess, SilentMetadataServerMeansAnonymous) {
    const std::string host = "127.0.0.1:" + closed_port();
    auto plan = plan_gcs_access(
        "gs://models/a.bin", {},
        [&](const std::string& name) -> std::optional<std::string> {
            if (name == "GCE_METADATA_HOST") {
                return host;
            }
            return name == "HOME" ? std::optional<std::string>("/nonexistent") : std::nullopt;
        },
        gcs_read_only_scope);
    ASSERT_TRUE(plan) << plan.error().detail;
    EXPECT_EQ(plan->credentials.kind, GcsCredentialKind::metadata_server);
    asio::io_context loop;
    const auto started = Clock::now();
    auto access = testing::run_to_completion(loop, start_gcs_access(loop, std::move(*plan)));
    ASSERT_TRUE(access) << access.error().detail;
    EXPECT_EQ(access->credentials_from, "none found, anonymous");
    EXPECT_FALSE(access->tokens);
    EXPECT_LT(Clock::now() - started, 5s);
    EXPECT_EQ(access->endpoint, "https://storage.googleapis.com");
}

} // namespace
} // namespace ringload
