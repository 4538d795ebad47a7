// io/include/ringload/io/s3_connection.hpp
//
// One keep-alive HTTP/1.1 connection (TLS for https) to an S3 endpoint for the requests that
// are not range reads: the multipart upload's CreateMultipartUpload, UploadPart,
// CompleteMultipartUpload and AbortMultipartUpload, and PutObject. The S3 layer over the
// generic keep-alive connection (io/src/http_connection.hpp): each request is signed afresh (a
// retry gets a new x-amz-date) with the payload's SHA-256, so it is valid on http:// as well as
// https://; an error status carries S3's XML <Code>: <Message>. Responses are read whole (they
// are small XML documents).
//
//     S3Connection connection(loop, config, tls, url, timeout);
//     auto sending = connection.send_with_retries("PUT", url.target, part, "", attempts);
//     S3Response response = co_await std::move(sending);
//
// Thread: the loop thread.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"
#include "ringload/io/s3_config.hpp"
#include "ringload/io/url.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace ringload {

struct S3Response {
    unsigned status = 0; // 0: no response (connection failed or cut)
    std::string body;
    std::string etag;
    std::string failure; // why there is no response, or S3's <Code>: <Message> for an error status

    bool ok() const { return status >= 200 && status < 300; }
    // Worth another try: no response, or a retryable status (retry_policy.hpp's rule).
    bool retryable() const;
};

class S3Connection {
public:
    // `tls` is null for http:// (make_client_tls_context in io/src/tls_context.hpp makes it);
    // it and `config` outlive the connection. `insecure`: no host name check.
    S3Connection(asio::io_context& loop, const S3Config& config, asio::ssl::context* tls, Url origin,
                 std::chrono::milliseconds timeout, bool insecure);
    ~S3Connection();
    S3Connection(const S3Connection&) = delete;
    S3Connection& operator=(const S3Connection&) = delete;

    // One request to `target` (path and query, encoded) on origin's host; reconnects first when
    // the connection is closed. Never fails but with a response whose status is 0.
    Task<S3Response> send(std::string method, std::string target, std::span<const std::byte> body,
                          std::string content_type);

    // send() up to `attempts` times while the answer is retryable, with exponential backoff.
    Task<S3Response> send_with_retries(std::string method, std::string target, std::span<const std::byte> body,
                                       std::string content_type, std::size_t attempts);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace ringload
