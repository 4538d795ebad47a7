// io/src/http_retry.hpp
//
// The retry loop both HTTP versions run around one range request: redirects followed (at most
// max_redirects), requests the server never saw (FailureKind::unsent: a stale keep-alive, a
// refused HTTP/2 stream) resent at once up to `free_resends`, other retryable failures
// (retry_policy.hpp) tried again after a backoff pause, up to `attempts` in all; the last error
// says how many were made. A read its source abandoned (`abandoned()`, Source::abandon_reads)
// is not tried again: it fails as cancelled.
//
//     auto reading = retry_range(name_, options_.attempts, 1, backoff_,
//                                [&] { return try_once(offset, dst); },
//                                [&](const std::string& location) { return follow_redirect(location); },
//                                abandonment_.watch_from_now());
// Thread: the loop thread.
#pragma once

#include "http_object.hpp"
#include "retry_policy.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/io/http_source.hpp"

#include <string>

namespace ringload::http_object {

// How one try at a range went.
struct Attempt {
    Result<std::size_t> bytes = std::size_t{0};
    FailureKind kind = FailureKind::fatal;    // when `bytes` is an error: what kind of failure
    std::chrono::milliseconds retry_after{0}; // what the server asked for (Retry-After), if anything
    std::string redirect;                     // Location of a 301/302/303/307/308: ask there instead

    void failed(Error error, FailureKind failure_kind) {
        bytes = std::move(error);
        kind = failure_kind;
    }
};

// TryOnce: () -> Task<Attempt-like> (an Attempt or a type derived from it);
// FollowRedirect: (const std::string& location) -> Task<Result<void>>.
template <class TryOnce, class FollowRedirect>
Task<Result<std::size_t>> retry_range(std::string name, std::size_t attempts, std::size_t free_resends,
                                      Backoff& backoff, TryOnce try_once, FollowRedirect follow_redirect,
                                      std::function<bool()> abandoned = {}) {
    std::size_t redirects = 0;
    std::size_t resends = 0;
    for (std::size_t attempt = 1;; ++attempt) {
        if (abandoned && abandoned()) {
            co_return abandoned_read(name);
        }
        auto trying = try_once();
        auto done = co_await std::move(trying);
        if (!done.redirect.empty()) {
            if (++redirects > max_redirects) {
                co_return fail(errc::io_error, name + ": more than " + std::to_string(max_redirects) +
                                                   " redirects (last to " + done.redirect + ")");
            }
            RL_CO_TRY_VOID(co_await follow_redirect(done.redirect));
            --attempt;
            continue;
        }
        if (done.bytes || !retryable(done.kind)) {
            co_return std::move(done.bytes);
        }
        if (abandoned && abandoned()) {
            co_return abandoned_read(name);
        }
        if (done.kind == FailureKind::unsent && ++resends <= free_resends) {
            --attempt; // not the request's fault, and not counted
            continue;
        }
        if (attempt >= attempts) {
            Error error = done.bytes.error();
            error.detail += " (gave up after " + std::to_string(attempt) + " attempts)";
            co_return error;
        }
        auto pause = pause_before_retry(backoff, attempt, done.retry_after, abandoned);
        co_await std::move(pause); // then the loop's first check
    }
}

// The Range header's value for `length` bytes at `offset_bytes`: what a request sends and its
// signer signs.
inline std::string range_header_value(std::uint64_t offset_bytes, std::size_t length) {
    return "bytes=" + std::to_string(offset_bytes) + "-" + std::to_string(offset_bytes + length - 1);
}

// The signer's headers for a `method` request of `url` with Range `range` ("" for none; none
// without a signer), for both HTTP versions. `options` belongs to the source that awaits this.
inline Task<Result<std::vector<HttpSourceOptions::Header>>> sign_request_as(const HttpSourceOptions& options,
                                                                            std::string method, Url url,
                                                                            std::string range) {
    if (!options.sign_request) {
        co_return std::vector<HttpSourceOptions::Header>();
    }
    auto signing = options.sign_request(std::move(url), std::move(method), std::move(range));
    co_return co_await std::move(signing);
}

inline Task<Result<std::vector<HttpSourceOptions::Header>>> sign_get(const HttpSourceOptions& options, Url url,
                                                                     std::string range) {
    auto signing = sign_request_as(options, "GET", std::move(url), std::move(range));
    co_return co_await std::move(signing);
}

} // namespace ringload::http_object
