// tests/io/retry_policy_test.cpp
//
// The network retry policy (io/src/retry_policy.hpp) and the range retry loop built on it
// (io/src/http_retry.hpp): which kinds and statuses are retried, the backoff's bounds and its
// respect for Retry-After, free resends of requests the server never saw, the attempt count in
// the last error, and the redirect limit. The loop runs on a real io_context with 1 ms pauses.
#include "retry_policy.hpp"
#include "http_retry.hpp"

#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <vector>

namespace ringload {
namespace {

using namespace std::chrono_literals;
using http_object::Attempt;

TEST(RetryPolicy, KindsWorthAnotherTry) {
    for (FailureKind kind : {FailureKind::unsent, FailureKind::connect, FailureKind::timeout, FailureKind::reset,
                             FailureKind::status_retryable}) {
        EXPECT_TRUE(retryable(kind)) << static_cast<int>(kind);
    }
    for (FailureKind kind : {FailureKind::tls, FailureKind::http1_only, FailureKind::fatal}) {
        EXPECT_FALSE(retryable(kind)) << static_cast<int>(kind);
    }
}

TEST(RetryPolicy, RetryableStatuses) {
    for (unsigned status : {408u, 429u, 500u, 502u, 503u, 504u}) {
        EXPECT_TRUE(retryable_status(status)) << status;
    }
    for (unsigned status : {200u, 206u, 301u, 400u, 403u, 404u, 416u, 501u, 505u}) {
        EXPECT_FALSE(retryable_status(status)) << status;
    }
}

TEST(Backoff, DoublesWithJitterInTheUpperHalfUpToTheCap) {
    Backoff backoff(100ms, 5'000ms);
    for (int round = 0; round < 50; ++round) {
        const auto first = backoff.delay(1);
        EXPECT_GE(first, 50ms);
        EXPECT_LE(first, 100ms);
        const auto third = backoff.delay(3);
        EXPECT_GE(third, 200ms);
        EXPECT_LE(third, 400ms);
        const auto late = backoff.delay(40); // no overflow past the cap
        EXPECT_GE(late, 2'500ms);
        EXPECT_LE(late, 5'000ms);
    }
}

TEST(Backoff, RetryAfterIsAFloorCappedByTheMaximum) {
    Backoff backoff(100ms, 5'000ms);
    EXPECT_EQ(backoff.delay(1, 3'000ms), 3'000ms);
    EXPECT_EQ(backoff.delay(1, 60'000ms), 5'000ms);
    EXPECT_LE(backoff.delay(1, 10ms), 100ms); // less than the backoff: the backoff
}

// A try that plays the next entry of `script` (the last one again when it runs out).
Task<Attempt> scripted(std::vector<Attempt>* script, std::size_t* calls) {
    const std::size_t at = std::min(*calls, script->size() - 1);
    ++*calls;
    co_return (*script)[at];
}

Task<Result<void>> no_redirect(std::size_t* redirects) {
    ++*redirects;
    co_return Result<void>();
}

Attempt failing(FailureKind kind) {
    Attempt attempt;
    attempt.failed(fail(errc::io_error, "n: bytes 0-9: " + std::to_string(static_cast<int>(kind))), kind);
    return attempt;
}

Attempt succeeding(std::size_t bytes) {
    Attempt attempt;
    attempt.bytes = bytes;
    return attempt;
}

struct Run {
    Result<std::size_t> result = std::size_t{0};
    std::size_t calls = 0;
    std::size_t redirects = 0;
};

Run run_script(std::vector<Attempt> script, std::size_t attempts, std::size_t free_resends) {
    boost::asio::io_context loop;
    Backoff backoff(1ms, 1ms);
    Run run;
    auto retrying = http_object::retry_range(
        "n", attempts, free_resends, backoff, [&] { return scripted(&script, &run.calls); },
        [&](const std::string&) { return no_redirect(&run.redirects); });
    run.result = testing::run_to_completion(loop, std::move(retrying));
    return run;
}

TEST(RetryRange, RetriesRetryableKindsThenSucceeds) {
    auto run = run_script({failing(FailureKind::reset), failing(FailureKind::status_retryable), succeeding(10)}, 6, 0);
    ASSERT_TRUE(run.result) << run.result.error().detail;
    EXPECT_EQ(*run.result, 10u);
    EXPECT_EQ(run.calls, 3u);
}

TEST(RetryRange, GivesUpAfterTheAttemptsAndSaysSo) {
    auto run = run_script({failing(FailureKind::timeout)}, 3, 0);
    ASSERT_FALSE(run.result);
    EXPECT_EQ(run.calls, 3u);
    EXPECT_NE(run.result.error().detail.find("(gave up after 3 attempts)"), std::string::npos);
}

TEST(RetryRange, NeverRetriesTlsFatalOrHttp1Only) {
    for (FailureKind kind : {FailureKind::tls, FailureKind::fatal, FailureKind::http1_only}) {
        auto run = run_script({failing(kind)}, 6, 1);
        ASSERT_FALSE(run.result);
        EXPECT_EQ(run.calls, 1u);
        EXPECT_EQ(run.result.error().detail.find("gave up"), std::string::npos);
    }
}

TEST(RetryRange, UnsentRequestsAreResentWithoutCountingAnAttempt) {
    // Two free resends, then the third unsent counts as attempt 1 of 2, then success.
    auto run = run_script(
        {failing(FailureKind::unsent), failing(FailureKind::unsent), failing(FailureKind::unsent), succeeding(4)}, 2,
        2);
    ASSERT_TRUE(run.result) << run.result.error().detail;
    EXPECT_EQ(run.calls, 4u);
}

TEST(RetryRange, CutBodiesReturnWhatArrived) {
    Attempt cut = succeeding(3);
    cut.kind = FailureKind::reset; // what arrived counts; the engine asks again for the rest
    auto run = run_script({cut}, 6, 0);
    ASSERT_TRUE(run.result);
    EXPECT_EQ(*run.result, 3u);
    EXPECT_EQ(run.calls, 1u);
}

TEST(RetryRange, FollowsRedirectsUpToTheLimit) {
    Attempt moved;
    moved.redirect = "/elsewhere";
    auto followed = run_script({moved, moved, succeeding(1)}, 1, 0);
    ASSERT_TRUE(followed.result);
    EXPECT_EQ(followed.redirects, 2u);
    auto looping = run_script({moved}, 1, 0);
    ASSERT_FALSE(looping.result);
    EXPECT_EQ(looping.redirects, http_object::max_redirects);
    EXPECT_NE(looping.result.error().detail.find("more than 5 redirects (last to /elsewhere)"), std::string::npos);
}

} // namespace
} // namespace ringload
