// io/src/s3_connection.cpp
#include "ringload/io/s3_connection.hpp"

#include "ringload/io/s3_error.hpp"
#include "ringload/io/s3_signer.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/http/span_body.hpp>

#include <optional>
#include <random>

namespace ringload {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Result<std::unique_ptr<asio::ssl::context>> make_s3_tls_context(const std::string& ca_file, bool insecure) {
    auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    boost::system::error_code ec;
    context->set_default_verify_paths(ec);
    if (!ca_file.empty()) {
        context->load_verify_file(ca_file, ec);
        if (ec) {
            return fail(errc::invalid_argument, ca_file + ": cannot load CA certificates (PEM): " + ec.message());
        }
    }
    context->set_verify_mode(insecure ? asio::ssl::verify_none : asio::ssl::verify_peer);
    return context;
}

struct S3Connection::Impl {
    Impl(asio::io_context& loop_, const S3Config& config_, asio::ssl::context* tls_context_, Url origin_,
         std::chrono::milliseconds timeout_)
        : loop(loop_), config(config_), tls_context(tls_context_), origin(std::move(origin_)), timeout(timeout_) {}

    beast::tcp_stream& tcp() { return tls ? tls->next_layer() : *plain; }

    void close() {
        plain.reset();
        tls.reset();
        buffer.clear();
    }

    // TCP, then for https TLS with SNI and the certificate checked against the host name.
    Task<std::string> connect() {
        close();
        if (tls_context != nullptr) {
            tls.emplace(loop, *tls_context);
        } else {
            plain.emplace(loop);
        }
        tcp::resolver resolver(loop);
        auto resolve_done = co_await resolver.async_resolve(origin.host, origin.port, use_task);
        auto& [resolve_ec, endpoints] = resolve_done;
        if (resolve_ec) {
            co_return "cannot resolve " + origin.host + ": " + resolve_ec.message();
        }
        tcp().expires_after(timeout);
        auto connect_done = co_await tcp().async_connect(endpoints, use_task);
        auto& [connect_ec, endpoint] = connect_done;
        (void)endpoint;
        if (connect_ec) {
            co_return "cannot connect to " + origin.host_header + ": " + connect_ec.message();
        }
        boost::system::error_code ignored;
        tcp().socket().set_option(tcp::no_delay(true), ignored);
        if (!tls) {
            co_return "";
        }
        boost::system::error_code address_ec;
        asio::ip::make_address(origin.host, address_ec);
        if (address_ec) {
            ::SSL_set_tlsext_host_name(tls->native_handle(), origin.host.c_str());
        }
        // make_s3_tls_context leaves verification off only when asked to (insecure).
        if (::SSL_CTX_get_verify_mode(tls_context->native_handle()) != SSL_VERIFY_NONE) {
            tls->set_verify_callback(asio::ssl::host_name_verification(origin.host));
        }
        tcp().expires_after(timeout);
        auto handshake_done = co_await tls->async_handshake(asio::ssl::stream_base::client, use_task);
        auto& [handshake_ec] = handshake_done;
        if (handshake_ec) {
            co_return "TLS handshake with " + origin.host_header + " failed: " + handshake_ec.message();
        }
        co_return "";
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
        http::response_parser<http::string_body> parser;
        parser.body_limit(1 << 20);
        tcp().expires_after(timeout);
        auto read_done = co_await http::async_read(stream, buffer, parser, use_task);
        auto& [read_ec, read] = read_done;
        (void)read;
        if (read_ec) {
            close();
            out.failure = "no response: " + read_ec.message();
            co_return out;
        }
        auto& response = parser.get();
        out.status = response.result_int();
        out.body = std::move(response.body());
        out.etag = std::string(response[http::field::etag]);
        if (!parser.keep_alive()) {
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
    std::optional<beast::tcp_stream> plain;
    std::optional<asio::ssl::stream<beast::tcp_stream>> tls;
    beast::flat_buffer buffer;
    std::minstd_rand random{std::random_device{}()};
};

S3Connection::S3Connection(asio::io_context& loop, const S3Config& config, asio::ssl::context* tls, Url origin,
                           std::chrono::milliseconds timeout)
    : impl_(std::make_unique<Impl>(loop, config, tls, std::move(origin), timeout)) {}

S3Connection::~S3Connection() = default;

Task<S3Response> S3Connection::send(std::string method, std::string target, std::span<const std::byte> body,
                                    std::string content_type) {
    Impl& impl = *impl_;
    if (!impl.plain && !impl.tls) {
        auto connecting = impl.connect();
        std::string failure = co_await std::move(connecting);
        if (!failure.empty()) {
            impl.close();
            S3Response out;
            out.failure = std::move(failure);
            co_return out;
        }
    }
    http::request<http::span_body<const char>> request{http::string_to_verb(method), target, 11};
    request.set(http::field::host, impl.origin.host_header);
    request.set(http::field::user_agent, "ringload/0.1");
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
    auto exchanging = impl.tls ? impl.exchange(*impl.tls, request) : impl.exchange(*impl.plain, request);
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
        // Exponential backoff with jitter, as the range reads do: 100 ms doubling up to 5 s.
        const long long ceiling = std::min<long long>(100LL << std::min<std::size_t>(attempt - 1, 6), 5'000);
        std::uniform_int_distribution<long long> jitter(ceiling / 2, ceiling);
        asio::steady_timer timer(impl_->loop);
        timer.expires_after(std::chrono::milliseconds(jitter(impl_->random)));
        auto waited = co_await timer.async_wait(use_task);
        (void)waited;
    }
}

} // namespace ringload
