// io/src/connect.cpp
#include "connect.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/core/error.hpp>

namespace ringload {

using tcp = asio::ip::tcp;

std::string_view ClientStream::alpn_selected() {
    if (!tls_) {
        return {};
    }
    const unsigned char* chosen = nullptr;
    unsigned chosen_length = 0;
    ::SSL_get0_alpn_selected(tls_->native_handle(), &chosen, &chosen_length);
    return {reinterpret_cast<const char*>(chosen), chosen_length};
}

Task<Result<tcp::resolver::results_type>> resolve_endpoints(std::string host, std::string port) {
    auto loop = co_await asio::this_coro::executor;
    tcp::resolver resolver(loop);
    auto resolved = co_await resolver.async_resolve(host, port, use_task);
    auto& [ec, endpoints] = resolved;
    if (ec) {
        co_return fail(errc::io_error, ec.message());
    }
    co_return std::move(endpoints);
}

namespace {

// SNI, ALPN and host verification on a TLS stream about to shake hands with `host`.
void prepare_handshake(ClientStream::TlsStream& tls, const std::string& host, const ConnectSettings& settings) {
    boost::system::error_code address_ec;
    asio::ip::make_address(host, address_ec);
    if (address_ec) { // a name, not an address: SNI (RFC 6066 has no SNI for addresses)
        ::SSL_set_tlsext_host_name(tls.native_handle(), host.c_str());
    }
    if (!settings.alpn.empty()) {
        ::SSL_set_alpn_protos(tls.native_handle(), settings.alpn.data(), static_cast<unsigned>(settings.alpn.size()));
    }
    if (!settings.insecure) {
        tls.set_verify_callback(asio::ssl::host_name_verification(host));
    }
}

} // namespace

Task<boost::system::error_code> connect_tcp(boost::beast::tcp_stream& socket, tcp::resolver::results_type endpoints,
                                            std::chrono::milliseconds timeout) {
    socket.expires_after(timeout);
    auto connected = co_await socket.async_connect(endpoints, use_task);
    auto& [ec, endpoint] = connected;
    (void)endpoint;
    if (!ec) {
        // Requests are small writes followed by a read: without NODELAY, Nagle and delayed
        // ACKs cost up to 200 ms per request.
        boost::system::error_code ignored;
        socket.socket().set_option(tcp::no_delay(true), ignored);
    }
    co_return ec;
}

Task<NetResult<void>> connect_stream(ClientStream& stream, tcp::resolver::results_type endpoints, Url peer,
                                     ConnectSettings settings) {
    boost::beast::tcp_stream& socket = stream.tcp();
    auto connecting = connect_tcp(socket, std::move(endpoints), settings.timeout);
    const boost::system::error_code ec = co_await std::move(connecting);
    if (ec) {
        const auto kind = ec == boost::beast::error::timeout ? FailureKind::timeout : FailureKind::connect;
        co_return NetError{fail(errc::io_error, "cannot connect to " + peer.host_header + ": " + ec.message()), kind};
    }
    boost::system::error_code ignored;
    if (settings.receive_buffer_bytes != 0) {
        socket.socket().set_option(
            asio::socket_base::receive_buffer_size(static_cast<int>(settings.receive_buffer_bytes)), ignored);
    }
    if (!stream.is_tls()) {
        co_return NetResult<void>();
    }
    prepare_handshake(stream.tls(), peer.host, settings);
    socket.expires_after(settings.timeout);
    auto shaken = co_await stream.tls().async_handshake(asio::ssl::stream_base::client, use_task);
    auto& [handshake_ec] = shaken;
    if (handshake_ec) {
        co_return NetError{
            fail(errc::io_error, "TLS handshake with " + peer.host_header + " failed: " + handshake_ec.message() +
                                     (settings.insecure ? "" : " (--ca-file to trust another CA)")),
            FailureKind::tls};
    }
    co_return NetResult<void>();
}

} // namespace ringload
