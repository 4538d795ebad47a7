// io/src/retry_policy.cpp
#include "retry_policy.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>

namespace ringload {

std::chrono::milliseconds Backoff::delay(std::size_t attempt, std::chrono::milliseconds retry_after) {
    const auto exponent = std::min<std::size_t>(std::max<std::size_t>(attempt, 1) - 1, 20);
    const std::chrono::milliseconds capped = std::min<std::chrono::milliseconds>(base_ * (1LL << exponent), max_);
    std::uniform_int_distribution<long long> jitter(capped.count() / 2, capped.count());
    const std::chrono::milliseconds chosen(jitter(random_));
    return std::max(chosen, std::min<std::chrono::milliseconds>(retry_after, max_));
}

Task<void> pause_before_retry(Backoff& backoff, std::size_t attempt, std::chrono::milliseconds retry_after,
                              std::function<bool()> stopped) {
    auto loop = co_await asio::this_coro::executor;
    asio::steady_timer timer(loop);
    const auto until = std::chrono::steady_clock::now() + backoff.delay(attempt, retry_after);
    constexpr auto slice = std::chrono::milliseconds(50);
    while (std::chrono::steady_clock::now() < until && !(stopped && stopped())) {
        timer.expires_at(stopped ? std::min(until, std::chrono::steady_clock::now() + slice) : until);
        auto waited = co_await timer.async_wait(use_task);
        (void)waited;
    }
}

} // namespace ringload
