// io/src/s3_connection.cpp
#include "ringload/io/s3_connection.hpp"

#include "connect.hpp"
#include "http_object.hpp"
#include "retry_policy.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/s3_signer.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/span_body.hpp>

#include <optional>

namespace ringload {

namespace beast = boost::beast;
namespace http = beast::http;

bool S3Response::retryable() const {
    return status == 0 || retryable_status(status);
}

struct S3Connection::Impl {
    Impl(asio::io_context& loop_, const S3Config& config_, asio::ssl::context* tls_context_, Url origin_,
         std::chrono::milliseconds timeout_, bool insecure_)
        : loop(loop_),
          config(config_),
          tls_context(tls_context_),
          origin(std::move(origin_)),
          timeout(timeout_),
          insecure(insecure_) {}

    beast::tcp_stream& tcp() { return link->tcp(); }

    void close() {
        link.reset();
        buffer.clear();
    }

    // Resolve, TCP, then for https TLS (connect.hpp).
    Task<Result<void>> connect() {
        close();
        link.emplace(loop.get_executor(), tls_context);
        auto resolving = resolve_endpoints(origin.host, origin.port);
        auto endpoints = co_await std::move(resolving);
        if (!endpoints) {
            co_return fail(errc::io_error, "cannot resolve " + origin.host + ": " + endpoints.error().detail);
        }
        ConnectSettings settings;
        settings.timeout = timeout;
        settings.insecure = insecure;
        auto connecting = connect_stream(*link, std::move(*endpoints), origin, settings);
        auto connected = co_await std::move(connecting);
        if (!connected) {
            co_return connected.error().error;
        }
        co_return Result<void>();
    }

    template <class Stream>
    Task<S3Response> exchange(Stream& stream, http::request<http::span_body<const char>>& request) {
        S3Response out;
        tcp().expires_after(timeout);
        auto write_done = co_await http::async_write(stream, request, use_task);
        auto& [write_ec, written] = write_done;
        (void)written;
        if (write_ec) {
            close();
            out.failure = "sending the request failed: " + write_ec.message();
            co_return out;
        }
        // Interim 1xx responses (100 Continue, 103 Early Hints) may come first: each is read
        // (a head, no body) and passed over; a fresh parser reads the next.
        std::optional<http::response_parser<http::string_body>> parser;
        for (int interim = 0;; ++interim) {
            if (interim > http_object::max_interim_responses) {
                close();
                out.failure = "no final response after " + std::to_string(interim) + " interim (1xx) ones";
                co_return out;
            }
            parser.emplace();
            parser->body_limit(1 << 20);
            tcp().expires_after(timeout);
            auto read_done = co_await http::async_read(stream, buffer, *parser, use_task);
            auto& [read_ec, read] = read_done;
            (void)read;
            if (read_ec) {
                close();
                out.failure = "no response: " + read_ec.message();
                co_return out;
            }
            if (!http_object::is_interim(parser->get().result_int())) {
                break;
            }
        }
        auto& response = parser->get();
        out.status = response.result_int();
        out.body = std::move(response.body());
        out.etag = std::string(response[http::field::etag]);
        if (!parser->keep_alive()) {
            close();
        }
        if (!out.ok()) {
            const std::string summary = s3_error_summary(out.body);
            out.failure = "HTTP " + std::to_string(out.status) + " " + std::string(response.reason()) +
                          (summary.empty() ? "" : " (" + summary + ")");
        }
        co_return out;
    }

    asio::io_context& loop;
    const S3Config& config;
    asio::ssl::context* tls_context;
    Url origin;
    std::chrono::milliseconds timeout;
    bool insecure;
    std::optional<ClientStream> link; // none while closed
    beast::flat_buffer buffer;
    Backoff backoff;
};

S3Connection::S3Connection(asio::io_context& loop, const S3Config& config, asio::ssl::context* tls, Url origin,
                           std::chrono::milliseconds timeout, bool insecure)
    : impl_(std::make_unique<Impl>(loop, config, tls, std::move(origin), timeout, insecure)) {}

S3Connection::~S3Connection() = default;

Task<S3Response> S3Connection::send(std::string method, std::string target, std::span<const std::byte> body,
                                    std::string content_type) {
    Impl& impl = *impl_;
    if (!impl.link) {
        auto connecting = impl.connect();
        auto connected = co_await std::move(connecting);
        if (!connected) {
            impl.close();
            S3Response out;
            out.failure = std::move(connected.error().detail);
            co_return out;
        }
    }
    http::request<http::span_body<const char>> request{http::string_to_verb(method), target, 11};
    request.set(http::field::host, impl.origin.host_header);
    request.set(http::field::user_agent, user_agent);
    if (!content_type.empty()) {
        request.set(http::field::content_type, content_type);
    }
    Url url = impl.origin;
    url.target = target;
    for (const auto& [name, value] : s3_request_headers(impl.config, url, method, s3_payload_sha256(body))) {
        request.set(name, value);
    }
    request.body() = std::span<const char>(reinterpret_cast<const char*>(body.data()), body.size());
    request.prepare_payload();
    auto exchanging = impl.link->visit([&](auto& stream) { return impl.exchange(stream, request); });
    co_return co_await std::move(exchanging);
}

Task<S3Response> S3Connection::send_with_retries(std::string method, std::string target,
                                                 std::span<const std::byte> body, std::string content_type,
                                                 std::size_t attempts) {
    for (std::size_t attempt = 1;; ++attempt) {
        auto sending = send(method, target, body, content_type);
        S3Response response = co_await std::move(sending);
        if (!response.retryable() || attempt >= attempts) {
            if (!response.ok() && attempt > 1) {
                response.failure += " (gave up after " + std::to_string(attempt) + " attempts)";
            }
            co_return response;
        }
        // The range reads' backoff: 100 ms doubling up to 5 s, with jitter.
        auto pause = pause_before_retry(impl_->backoff, attempt);
        co_await std::move(pause);
    }
}

} // namespace ringload
