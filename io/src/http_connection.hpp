// io/src/http_connection.hpp
//
// One keep-alive HTTP/1.1 connection (TLS for https) for the requests that are not range
// reads: S3's multipart upload calls (s3_connection.hpp signs them), GCS's token exchange,
// metadata lookup and resumable upload. What authorises a request comes from a HeaderSupplier
// asked afresh for each try: a retried SigV4 request needs a new x-amz-date, and a bearer token
// may have been refreshed in the meantime. Responses are read whole, up to 1 MiB: they are small
// XML or JSON documents.
//
//     HttpConnection connection(loop, tls.get(), origin, {.timeout = 30s, .headers = bearer});
//     HttpRequest put{.method = "PUT", .target = session.target, .body = chunk};
//     auto sending = connection.send_with_retries(std::move(put), attempts);
//     HttpResponse response = co_await std::move(sending);
//
// Messages name the peer, never a header's value. Thread: the loop thread.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"
#include "ringload/io/url.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload {

using HttpHeader = std::pair<std::string, std::string>;
using HttpHeaders = std::vector<HttpHeader>;

struct HttpRequest {
    std::string method;
    std::string target;              // path and query, encoded
    std::span<const std::byte> body; // the caller's, until the response is back
    std::string content_type;        // none when empty
    HttpHeaders headers;             // besides Host, User-Agent, Content-Length and the supplier's
};

struct HttpResponse {
    unsigned status = 0; // 0: no response (no connection, cut off, or no headers could be made)
    std::string reason;
    std::string body;
    std::string etag;
    std::string location;
    std::string range; // a 308's Range: what a GCS resumable upload session holds
    std::string retry_after;
    // Why there is no response, or for an error status "HTTP 403 Forbidden (what the body says)".
    std::string failure;
    bool headers_failed = false; // the supplier failed (a token refused): another try fails the same

    bool ok() const { return status >= 200 && status < 300; }
    // Worth another try: no response (but not a failed supplier), or a retryable status
    // (retry_policy.hpp's rule).
    bool retryable() const;
};

struct HttpConnectionSettings {
    std::chrono::milliseconds timeout{30'000}; // connect, and each read or write
    bool insecure = false;                     // no certificate or host name checks
    // The headers that authorise a request to `url` (the origin and the request's target), made
    // for each try; an error ends the request with HttpResponse::headers_failed. The arguments
    // are copies, but `body` stays the caller's until the response.
    using HeaderSupplier =
        std::function<Task<Result<HttpHeaders>>(Url url, std::string method, std::span<const std::byte> body)>;
    HeaderSupplier headers;
    // What an error status's body says, in brackets after the status in HttpResponse::failure
    // ("" adds nothing): S3's XML <Code>, GCS's JSON error message.
    std::function<std::string(unsigned status, std::string_view body)> explain_error;
};

class HttpConnection {
public:
    // `tls` is null for http:// (make_client_tls_context in tls_context.hpp makes it); it
    // outlives the connection.
    HttpConnection(asio::io_context& loop, asio::ssl::context* tls, Url origin, HttpConnectionSettings settings);
    ~HttpConnection();
    HttpConnection(const HttpConnection&) = delete;
    HttpConnection& operator=(const HttpConnection&) = delete;

    const Url& origin() const;

    // One request on origin's host; connects first when the connection is closed. Never fails
    // but with a response whose status is 0.
    Task<HttpResponse> send(HttpRequest request);

    // send() up to `attempts` times while the answer is retryable, pausing with exponential
    // backoff and jitter (at least a Retry-After) in between; a last failure says how many tries.
    Task<HttpResponse> send_with_retries(HttpRequest request, std::size_t attempts);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace ringload
