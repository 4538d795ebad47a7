// io/src/retry_policy.hpp
//
// The one retry policy of the network sources and the S3 uploads: which failures are worth
// another try (decided on a typed FailureKind carried with the failure, never on its message),
// which HTTP statuses are, and how long to pause in between (exponential backoff with jitter,
// at least what the server asked for with Retry-After). Also the User-Agent every request sends.
//
//     Backoff backoff(100ms, 5s);
//     if (retryable(failure.kind) && attempt < attempts) {
//         RL_CO_TRY_VOID(... co_await pause_before_retry(backoff, attempt, retry_after) ...);
//     }
// Thread: any; a Backoff is used by one thread at a time.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <boost/system/result.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <random>

namespace ringload {

inline constexpr const char* user_agent = "ringload/0.1";

// What went wrong with one request, as far as retrying goes.
enum class FailureKind : std::uint8_t {
    unsent,           // never reached the server's handling (a stale keep-alive, a refused stream)
    connect,          // resolving or connecting failed
    tls,              // the TLS handshake failed: a certificate that does not verify will not next time
    timeout,          // no answer within the timeout
    reset,            // the connection broke, or a body was cut off
    status_retryable, // 408, 429 or a 5xx that the next try may not get
    http1_only,       // the server speaks HTTP/1.1 only (ALPN chose it, or it ignores Range over HTTP/2)
    fatal,            // anything else: a 4xx, a changed object, a protocol error
};

// Worth another try after a pause (an `unsent` request is resent at once first, see http_retry.hpp).
constexpr bool retryable(FailureKind kind) {
    switch (kind) {
        case FailureKind::unsent:
        case FailureKind::connect:
        case FailureKind::timeout:
        case FailureKind::reset:
        case FailureKind::status_retryable:
            return true;
        case FailureKind::tls:
        case FailureKind::http1_only:
        case FailureKind::fatal:
            return false;
    }
    return false;
}

// 408, 429 and the 5xx a proxy or an overloaded server answers: the next try may succeed.
constexpr bool retryable_status(unsigned status) {
    return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

// A failure with its kind.
struct NetError {
    Error error;
    FailureKind kind = FailureKind::fatal;
};
template <class T>
using NetResult = boost::system::result<T, NetError>;

// Exponential backoff with jitter: base * 2^(attempt-1), capped, then a random point in its
// upper half; at least what the server asked for with Retry-After (capped too).
class Backoff {
public:
    Backoff(std::chrono::milliseconds base = std::chrono::milliseconds(100),
            std::chrono::milliseconds max = std::chrono::milliseconds(5'000))
        : base_(base), max_(max) {}
    // attempt: 1 for the pause after the first try.
    std::chrono::milliseconds delay(std::size_t attempt,
                                    std::chrono::milliseconds retry_after = std::chrono::milliseconds(0));

private:
    std::chrono::milliseconds base_;
    std::chrono::milliseconds max_;
    std::minstd_rand random_{std::random_device{}()};
};

// Waits backoff.delay(attempt, retry_after) on the calling coroutine's executor, or less once
// `stopped()` says so (asked every 50 ms; an empty one never stops the pause).
Task<void> pause_before_retry(Backoff& backoff, std::size_t attempt,
                              std::chrono::milliseconds retry_after = std::chrono::milliseconds(0),
                              std::function<bool()> stopped = {});

// How a network source lets go of the reads of a run that stopped (Source::abandon_reads): a
// count of abandonments, which each read notes as it starts. A read whose count has moved on
// is not tried again and its pauses end early; the source closes its connections itself.
class Abandonment {
public:
    std::uint64_t count() const { return count_; }
    void abandon() { ++count_; }
    // Whether the read that began when count() was `at_start` has been abandoned.
    bool since(std::uint64_t at_start) const { return count_ != at_start; }
    // For the read that begins now: true once it is abandoned. The source must outlive it.
    std::function<bool()> watch_from_now() const {
        return [this, at_start = count_] { return since(at_start); };
    }

private:
    std::uint64_t count_ = 0;
};

// What an abandoned read of `name` (a URL, redacted) ends with.
inline Error abandoned_read(const std::string& name) {
    return fail(errc::cancelled, name + ": the read was abandoned (its load stopped)");
}

} // namespace ringload
