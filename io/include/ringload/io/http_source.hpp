// io/include/ringload/io/http_source.hpp
//
// An object behind an http:// or https:// URL as a Source: HTTP/1.1 range GETs (Boost.Beast,
// TLS through OpenSSL) on a few keep-alive connections, each response body read straight into
// its ring slot.
//
//     RL_TRY(source, run_on_loop(loop, open_http_source(loop, "http://127.0.0.1:8080/m.tensors")));
//
// Opening sends `Range: bytes=0-0` to learn the size (Content-Range) and pin the object's
// validator (ETag, else Last-Modified): a later response with another one fails the load with
// "object changed while loading". A response that ends early returns what arrived (the engine
// re-requests the rest from there); a stale keep-alive connection is replaced at once; resets,
// timeouts, 408/429/5xx are retried with exponential backoff and jitter up to `attempts`.
// Redirects (301/302/303/307/308, up to 5) are followed, and later requests go straight to
// where they led. https: SNI, ALPN http/1.1, certificates verified against the system store
// (plus ca_file) and the host name. A server that ignores Range (200 to the first request) is
// read through one streaming GET, serving reads in offset order (restarted from byte 0 for a
// read behind it, or after a failure). HTTP/2: http2_source.hpp.
// Thread: the loop thread.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/io/url.hpp"

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload {

struct HttpSourceOptions {
    std::size_t connections = 8;               // range requests in flight
    std::chrono::milliseconds timeout{30'000}; // connect, and each read or write on a connection
    // Connection failures, resets, timeouts, 408/429/5xx: tried this many times in all, with
    // exponential backoff and jitter in between (Retry-After honoured up to backoff_max).
    std::size_t attempts = 6;
    std::chrono::milliseconds backoff_base{100};
    std::chrono::milliseconds backoff_max{5'000};
    // https: CAs to trust besides the system's (a PEM file, or a directory of hashed
    // certificates), or no certificate checks at all.
    std::string ca_file;
    bool insecure = false;
    std::size_t range_size_bytes = 8 << 20; // the read size the source asks the engine for
    // Open with a HEAD (size and validator, no byte read: what a cache holding the bytes asks),
    // falling back to the first range GET where the HEAD gets no 200 (a URL presigned for GET).
    bool open_without_reading = false;
    // Headers a request carries besides Host, User-Agent and Range: awaited before each request
    // (after redirects too), so that a signer may fetch or refresh a token over the network
    // first. S3's SigV4 Authorization is one. `range` is the value of the Range header the
    // request carries ("bytes=0-8388607"; "" for none): Azure's Shared Key signs it. An error
    // fails the read (not retried). Called on the loop thread; the arguments are copies, so the
    // coroutine may keep them.
    using Header = std::pair<std::string, std::string>;
    using RequestSigner =
        std::function<Task<Result<std::vector<Header>>>(Url url, std::string method, std::string range)>;
    RequestSigner sign_request;
    // What a refusal's body says, for the error message (S3's XML "Code: Message"): given the
    // status and the body of a 4xx, or of a redirect without a Location, when the body is at most
    // 64 KiB. "" adds nothing. HTTP/1.1 only (HTTP/2 resets such streams unread).
    using ErrorExplainer = std::function<std::string(unsigned status, std::string_view body)>;
    ErrorExplainer explain_error;
};

Task<Result<std::unique_ptr<Source>>> open_http_source(asio::io_context& loop, std::string url,
                                                       HttpSourceOptions options = {});

// http:// and https:// in the source registry (source_registry.hpp): HTTP/1.1 or HTTP/2 as
// NetworkOptions::http_version and ALPN choose.
struct SourceKind;
extern const SourceKind http_source;

} // namespace ringload
