// io/src/connect.hpp
//
// The one way out to a server for HTTP/1.1, HTTP/2 and the S3 uploads: resolve, TCP connect
// (TCP_NODELAY, the timeout), then for https the TLS handshake: SNI for host names, the ALPN
// list the caller offers, the certificate checked against the host name or IP address unless
// insecure. The TLS context comes from tls_context.hpp.
//
//     ClientStream stream(loop, tls_context.get());   // null context: plain TCP
//     auto connecting = connect_stream(stream, endpoints, url, settings);
//     auto connected = co_await std::move(connecting);   // NetResult: the kind says connect or tls
//     stream.visit([&](auto& s) { return s.async_read_some(buffer, use_task); });
//
// Messages name the peer, not the caller's object: "cannot connect to host:443: ...", "TLS
// handshake with host:443 failed: ... (--ca-file to trust another CA)". Callers prefix them.
// Thread: the loop thread.
#pragma once

#include "retry_policy.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/io/url.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace ringload {

// ALPN protocol lists in wire format (length-prefixed names).
inline constexpr unsigned char alpn_http1[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
inline constexpr unsigned char alpn_h2[] = {2, 'h', '2'};
inline constexpr unsigned char alpn_h2_or_http1[] = {2, 'h', '2', 8, 'h', 't', 't', 'p', '/', '1', '.', '1'};

struct ConnectSettings {
    std::chrono::milliseconds timeout{30'000}; // the connect, and the handshake
    bool insecure = false;                     // no certificate or host name checks
    std::span<const unsigned char> alpn;       // offered in the handshake; empty: no ALPN
    std::size_t receive_buffer_bytes = 0;      // SO_RCVBUF when not 0
};

// One connection: plain TCP, or TLS over it.
class ClientStream {
public:
    using TlsStream = asio::ssl::stream<boost::beast::tcp_stream>;

    // `tls` null: plain TCP. The context outlives the stream.
    ClientStream(asio::any_io_executor loop, asio::ssl::context* tls) {
        if (tls != nullptr) {
            tls_.emplace(loop, *tls);
        } else {
            plain_.emplace(loop);
        }
    }

    boost::beast::tcp_stream& tcp() { return tls_ ? tls_->next_layer() : *plain_; }
    bool is_tls() const { return tls_.has_value(); }
    TlsStream& tls() { return *tls_; }
    // Calls f with the stream to read and write: the TLS stream or the plain one.
    template <class F>
    decltype(auto) visit(F&& f) {
        return tls_ ? f(*tls_) : f(*plain_);
    }
    // The protocol ALPN settled on ("h2", "http/1.1"); empty for plain TCP or none.
    std::string_view alpn_selected();

private:
    std::optional<boost::beast::tcp_stream> plain_;
    std::optional<TlsStream> tls_;
};

// The addresses of host:port; the error's detail is the resolver's message alone.
Task<Result<asio::ip::tcp::resolver::results_type>> resolve_endpoints(std::string host, std::string port);

// The TCP part alone, for protocols without TLS (Redis): connect within `timeout`, then
// TCP_NODELAY. The error is the socket's.
Task<boost::system::error_code> connect_tcp(boost::beast::tcp_stream& socket,
                                            asio::ip::tcp::resolver::results_type endpoints,
                                            std::chrono::milliseconds timeout);

// TCP connect to `endpoints` (connect_tcp), then the TLS handshake with `peer` for a TLS stream. `stream` is
// fresh (never connected). Failure kinds: connect (or timeout), tls.
Task<NetResult<void>> connect_stream(ClientStream& stream, asio::ip::tcp::resolver::results_type endpoints, Url peer,
                                     ConnectSettings settings);

} // namespace ringload
