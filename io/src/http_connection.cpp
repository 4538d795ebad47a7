// io/src/http_connection.cpp
#include "http_connection.hpp"

#include "connect.hpp"
#include "http_object.hpp"
#include "retry_policy.hpp"

#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/span_body.hpp>

#include <optional>

namespace ringload {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

constexpr std::size_t response_body_bytes_max = 1 << 20;

using Request = http::request<http::span_body<const char>>;

} // namespace

bool HttpResponse::retryable() const {
    return status == 0 ? !headers_failed : retryable_status(status);
}

struct HttpConnection::Impl {
    Impl(asio::io_context& loop_, asio::ssl::context* tls_context_, Url origin_, HttpConnectionSettings settings_)
        : loop(loop_), tls_context(tls_context_), origin(std::move(origin_)), settings(std::move(settings_)) {}

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
        ConnectSettings connect_settings;
        connect_settings.timeout = settings.timeout;
        connect_settings.insecure = settings.insecure;
        auto connecting = connect_stream(*link, std::move(*endpoints), origin, connect_settings);
        auto connected = co_await std::move(connecting);
        if (!connected) {
            co_return connected.error().error;
        }
        co_return Result<void>();
    }

    // Reads the final response, passing over interim 1xx ones (100 Continue, 103 Early Hints):
    // each is a head without a body, and a fresh parser reads the next.
    template <class Stream>
    Task<Result<void>> read_final(Stream& stream, std::optional<http::response_parser<http::string_body>>& parser) {
        for (int interim = 0;; ++interim) {
            if (interim > http_object::max_interim_responses) {
                co_return fail(errc::io_error,
                               "no final response after " + std::to_string(interim) + " interim (1xx) ones");
            }
            parser.emplace();
            parser->body_limit(response_body_bytes_max);
            tcp().expires_after(settings.timeout);
            auto read_done = co_await http::async_read(stream, buffer, *parser, use_task);
            auto& [read_ec, read] = read_done;
            (void)read;
            if (read_ec) {
                co_return fail(errc::io_error, "no response: " + read_ec.message());
            }
            if (!http_object::is_interim(parser->get().result_int())) {
                co_return Result<void>();
            }
        }
    }

    template <class Stream>
    Task<HttpResponse> exchange(Stream& stream, Request& request) {
        HttpResponse out;
        tcp().expires_after(settings.timeout);
        auto write_done = co_await http::async_write(stream, request, use_task);
        auto& [write_ec, written] = write_done;
        (void)written;
        if (write_ec) {
            close();
            out.failure = "sending the request failed: " + write_ec.message();
            co_return out;
        }
        std::optional<http::response_parser<http::string_body>> parser;
        auto reading = read_final(stream, parser);
        auto read = co_await std::move(reading);
        if (!read) {
            close();
            out.failure = std::move(read.error().detail);
            co_return out;
        }
        take_response(*parser, out);
        if (!parser->keep_alive()) {
            close();
        }
        co_return out;
    }

    void take_response(http::response_parser<http::string_body>& parser, HttpResponse& out) const {
        auto& response = parser.get();
        out.status = response.result_int();
        out.reason = std::string(response.reason());
        out.body = std::move(response.body());
        out.etag = std::string(response[http::field::etag]);
        out.location = std::string(response[http::field::location]);
        out.range = std::string(response[http::field::range]);
        out.retry_after = std::string(response[http::field::retry_after]);
        if (!out.ok()) {
            const std::string why = settings.explain_error ? settings.explain_error(out.status, out.body) : "";
            out.failure = "HTTP " + std::to_string(out.status) + (out.reason.empty() ? "" : " " + out.reason) +
                          (why.empty() ? "" : " (" + why + ")");
        }
    }

    asio::io_context& loop;
    asio::ssl::context* tls_context;
    Url origin;
    HttpConnectionSettings settings;
    std::optional<ClientStream> link; // none while closed
    beast::flat_buffer buffer;
    Backoff backoff;
};

HttpConnection::HttpConnection(asio::io_context& loop, asio::ssl::context* tls, Url origin,
                               HttpConnectionSettings settings)
    : impl_(std::make_unique<Impl>(loop, tls, std::move(origin), std::move(settings))) {}

HttpConnection::~HttpConnection() = default;

const Url& HttpConnection::origin() const {
    return impl_->origin;
}

Task<HttpResponse> HttpConnection::send(HttpRequest request) {
    Impl& impl = *impl_;
    HttpResponse out;
    HttpHeaders supplied;
    if (impl.settings.headers) {
        Url url = impl.origin;
        url.target = request.target;
        auto supplying = impl.settings.headers(std::move(url), request.method, request.body);
        auto headers = co_await std::move(supplying);
        if (!headers) {
            out.failure = std::move(headers.error().detail);
            out.headers_failed = true;
            co_return out;
        }
        supplied = std::move(*headers);
    }
    if (!impl.link) {
        auto connecting = impl.connect();
        auto connected = co_await std::move(connecting);
        if (!connected) {
            impl.close();
            out.failure = std::move(connected.error().detail);
            co_return out;
        }
    }
    Request message{http::string_to_verb(request.method), request.target, 11};
    message.set(http::field::host, impl.origin.host_header);
    message.set(http::field::user_agent, user_agent);
    if (!request.content_type.empty()) {
        message.set(http::field::content_type, request.content_type);
    }
    for (const auto& [name, value] : request.headers) {
        message.set(name, value);
    }
    for (const auto& [name, value] : supplied) {
        message.set(name, value);
    }
    message.body() = std::span<const char>(reinterpret_cast<const char*>(request.body.data()), request.body.size());
    message.prepare_payload();
    auto exchanging = impl.link->visit([&](auto& stream) { return impl.exchange(stream, message); });
    co_return co_await std::move(exchanging);
}

Task<HttpResponse> HttpConnection::send_with_retries(HttpRequest request, std::size_t attempts) {
    for (std::size_t attempt = 1;; ++attempt) {
        auto sending = send(request);
        HttpResponse response = co_await std::move(sending);
        if (!response.retryable() || attempt >= attempts) {
            if (!response.ok() && attempt > 1) {
                response.failure += " (gave up after " + std::to_string(attempt) + " attempts)";
            }
            co_return response;
        }
        http_object::ResponseFacts facts;
        facts.retry_after = response.retry_after;
        // The range reads' backoff: 100 ms doubling up to 5 s, with jitter; at least Retry-After.
        auto pause = pause_before_retry(impl_->backoff, attempt, http_object::retry_after_of(facts));
        co_await std::move(pause);
    }
}

} // namespace ringload
