// io/src/s3_connection.cpp
#include "ringload/io/s3_connection.hpp"

#include "http_connection.hpp"
#include "retry_policy.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/s3_signer.hpp"

namespace ringload {

namespace {

// The connection's header supplier: SigV4 over the payload's SHA-256, made afresh for each try
// (a retry gets a new x-amz-date). `config` outlives the connection.
Task<Result<HttpHeaders>> sign_s3_request(const S3Config* config, Url url, std::string method,
                                          std::string payload_sha256) {
    co_return s3_request_headers(*config, url, method, payload_sha256);
}

S3Response s3_response_of(HttpResponse response) {
    S3Response out;
    out.status = response.status;
    out.body = std::move(response.body);
    out.etag = std::move(response.etag);
    out.failure = std::move(response.failure);
    return out;
}

} // namespace

bool S3Response::retryable() const {
    return status == 0 || retryable_status(status);
}

struct S3Connection::Impl {
    Impl(asio::io_context& loop, asio::ssl::context* tls, Url origin, HttpConnectionSettings settings)
        : http(loop, tls, std::move(origin), std::move(settings)) {}
    HttpConnection http;
};

S3Connection::S3Connection(asio::io_context& loop, const S3Config& config, asio::ssl::context* tls, Url origin,
                           std::chrono::milliseconds timeout, bool insecure) {
    HttpConnectionSettings settings;
    settings.timeout = timeout;
    settings.insecure = insecure;
    settings.headers = [&config](Url url, std::string method, std::span<const std::byte> body) {
        return sign_s3_request(&config, std::move(url), std::move(method), s3_payload_sha256(body));
    };
    settings.explain_error = [](unsigned, std::string_view body) { return s3_error_summary(body); };
    impl_ = std::make_unique<Impl>(loop, tls, std::move(origin), std::move(settings));
}

S3Connection::~S3Connection() = default;

Task<S3Response> S3Connection::send(std::string method, std::string target, std::span<const std::byte> body,
                                    std::string content_type) {
    HttpRequest request{std::move(method), std::move(target), body, std::move(content_type), {}};
    auto sending = impl_->http.send(std::move(request));
    HttpResponse response = co_await std::move(sending);
    co_return s3_response_of(std::move(response));
}

Task<S3Response> S3Connection::send_with_retries(std::string method, std::string target,
                                                 std::span<const std::byte> body, std::string content_type,
                                                 std::size_t attempts) {
    HttpRequest request{std::move(method), std::move(target), body, std::move(content_type), {}};
    auto sending = impl_->http.send_with_retries(std::move(request), attempts);
    HttpResponse response = co_await std::move(sending);
    co_return s3_response_of(std::move(response));
}

} // namespace ringload
