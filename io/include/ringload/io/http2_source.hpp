// io/include/ringload/io/http2_source.hpp
//
// An object behind an http:// or https:// URL read over HTTP/2 (nghttp2): range GETs as
// streams on a few connections (several connections beat many streams on one: 8 h2c
// connections reached 2.2 GB/s on loopback against 1.6 for 8 streams on one), with flow-control
// windows that hold whole ranges, DATA copied from the receive buffer straight into ring slots.
// http:// is h2c with prior knowledge; https:// negotiates h2 with ALPN.
//
//     RL_TRY(source, run_on_loop(loop, open_http2_source(loop, "http://127.0.0.1:8081/m.tensors", {}, {})));
//
// Same guarantees as the HTTP/1.1 source (http_source.hpp): size and validator pinned, cut
// bodies resumed by the engine, resets, timeouts and 408/429/5xx retried with backoff,
// redirects followed, clear errors. A server that ignores Range is an error here (the HTTP/1.1
// source reads it sequentially).
// Thread: the loop thread.
#pragma once

#include "ringload/io/http_source.hpp"

namespace ringload {

struct Http2SourceOptions {
    std::size_t streams_per_connection = 1;
    // https: offer http/1.1 besides h2 in ALPN; a server that picks it (or ignores Range over
    // HTTP/2) is then read by the HTTP/1.1 source (open_http_source) instead. Without it such a
    // server fails open() with errc::unsupported.
    bool allow_http1 = false;
};

Task<Result<std::unique_ptr<Source>>> open_http2_source(asio::io_context& loop, std::string url,
                                                        HttpSourceOptions options, Http2SourceOptions http2);

} // namespace ringload
