// io/src/http2_connection.hpp
//
// One HTTP/2 connection: cleartext with prior knowledge (h2c) or TLS with ALPN, an nghttp2
// client session fed by a reader coroutine, and requests as streams whose DATA frames are
// copied straight from the receive buffer into each request's destination (a ring slot).
//
//     RL_TRY(connection, co_await Http2Connection::open(loop, endpoints, url, tls, settings));
//     Http2Response got = co_await connection->get(url, "bytes=0-8388607", headers, slot_bytes);
//
// Arguments of coroutines are taken by value: they outlive the caller's temporaries.
// A connection that fails (reset, GOAWAY, timeout, a protocol error) fails every stream in
// flight on it with what arrived so far, and takes no more requests.
// Thread: the loop thread.
#pragma once

#include "http_object.hpp"
#include "retry_policy.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"
#include "ringload/io/url.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ringload {

struct Http2Settings {
    std::chrono::milliseconds timeout{30'000}; // connect, handshake, and the wait for any byte
    // Flow-control windows: a stream's covers a whole range request, so that a range flows
    // without waiting for WINDOW_UPDATEs; the connection's covers all streams in flight.
    std::uint32_t stream_window_bytes = 32 << 20;
    std::uint32_t connection_window_bytes = 256 << 20;
    bool insecure = false;
    bool allow_http1 = false; // TLS: offer http/1.1 too (then a server may choose it)
};

struct Http2Response {
    http_object::ResponseFacts facts; // empty status when no response came
    std::size_t body_bytes = 0;       // copied into the destination
    Result<void> outcome;             // a transport or protocol failure; body_bytes arrived anyway
    bool refused = false;             // never processed by the server (GOAWAY, REFUSED_STREAM): safe to resend
};

class Http2Connection : public std::enable_shared_from_this<Http2Connection> {
public:
    using Header = std::pair<std::string, std::string>;

    // Failure kinds: connect, timeout, tls (connect.hpp), and http1_only (errc::unsupported) when
    // TLS ALPN did not settle on h2 (http/1.1 is offered only with allow_http1).
    static Task<NetResult<std::shared_ptr<Http2Connection>>> open(asio::any_io_executor loop,
                                                                  asio::ip::tcp::resolver::results_type endpoints,
                                                                  Url url, asio::ssl::context* tls,
                                                                  Http2Settings settings);
    ~Http2Connection();
    Http2Connection(const Http2Connection&) = delete;
    Http2Connection& operator=(const Http2Connection&) = delete;

    // GET url with the given Range (empty: none) and extra headers; the body goes into `dst`
    // (a longer body is an error).
    Task<Http2Response> get(const Url& url, const std::string& range, const std::vector<Header>& headers,
                            std::span<std::byte> dst);

    bool usable() const; // takes new requests (not failed, closed or draining after GOAWAY)
    bool closed() const;
    std::size_t streams_in_flight() const;
    void close();

    struct Impl;

private:
    explicit Http2Connection(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

} // namespace ringload
