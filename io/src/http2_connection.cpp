// io/src/http2_connection.cpp
#include "http2_connection.hpp"

#include "connect.hpp"
#include "retry_policy.hpp"
#include "ringload/engine/stream_copy.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <nghttp2/nghttp2.h>

#include <cstring>
#include <map>

namespace ringload {
namespace {

namespace beast = boost::beast;
using tcp = asio::ip::tcp;

// One request's state, shared by the waiting get() and the session's callbacks.
struct Stream {
    explicit Stream(asio::any_io_executor loop) : done(loop) { done.expires_at(asio::steady_timer::time_point::max()); }
    std::span<std::byte> dst;
    Http2Response response;
    bool closed = false;
    asio::steady_timer done; // cancelled when the stream closes
    // The last time it got a header or data: a stream the server leaves waiting while others
    // on the connection flow is reset after the timeout.
    std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();
    // Inside a response header block (not trailers): from its begin callback to its frame
    // callback. Its fields are the response's.
    bool in_response_headers = false;
};

nghttp2_nv header_pair(const std::string& name, const std::string& value) {
    return {reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
            reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(), value.size(),
            NGHTTP2_NV_FLAG_NONE};
}

} // namespace

struct Http2Connection::Impl {
    Impl(asio::any_io_executor loop, asio::ssl::context* tls_context, Http2Settings settings_in)
        : executor(loop), settings(settings_in), link(loop, tls_context), watchdog(loop) {}
    ~Impl() {
        streams.clear();
        if (session != nullptr) {
            nghttp2_session_del(session);
        }
    }

    beast::tcp_stream& tcp() { return link.tcp(); }

    asio::any_io_executor executor;
    Http2Settings settings;
    ClientStream link; // the connection: TCP, or TLS over it
    std::string peer;  // host:port, for messages
    nghttp2_session* session = nullptr;
    std::map<std::int32_t, std::shared_ptr<Stream>> streams;
    std::vector<std::byte> receive_buffer = std::vector<std::byte>(1 << 20);
    std::vector<std::uint8_t> send_buffer;
    bool writing = false;
    // Streams in flight and no byte for settings.timeout: the connection has stalled.
    asio::steady_timer watchdog;
    std::chrono::steady_clock::time_point last_progress;
    bool dead = false;       // failed or closed: no more requests, no more I/O
    bool draining = false;   // GOAWAY received: no new requests, the ones in flight finish
    std::string dead_reason; // why, for the streams it fails

    // ---- nghttp2 callbacks (user_data is the Impl) ----
    static Stream* stream_of(nghttp2_session* session, std::int32_t id) {
        return static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
    }

    // The stream whose response header block this frame is: the first block (HCAT_RESPONSE) or,
    // after an informational 1xx, the final one (nghttp2 calls it HCAT_HEADERS). Not trailers.
    static Stream* response_headers_of(nghttp2_session* session, const nghttp2_frame* frame) {
        if (frame->hd.type != NGHTTP2_HEADERS) {
            return nullptr;
        }
        Stream* stream = stream_of(session, frame->hd.stream_id);
        if (stream == nullptr) {
            return nullptr;
        }
        const bool first = frame->headers.cat == NGHTTP2_HCAT_RESPONSE;
        const bool after_informational =
            frame->headers.cat == NGHTTP2_HCAT_HEADERS && stream->response.facts.status / 100 == 1;
        return first || after_informational ? stream : nullptr;
    }

    static int on_header(nghttp2_session* session, const nghttp2_frame* frame, const std::uint8_t* name,
                         std::size_t name_length, const std::uint8_t* value, std::size_t value_length,
                         std::uint8_t /*flags*/, void* /*user_data*/) {
        // Not response_headers_of: after a 1xx it knows the final block by the 1xx status, which
        // on_begin_headers has just cleared (every field of a final response after a 103 was
        // dropped: status 0, no response; http2_fuzz).
        Stream* stream = frame->hd.type == NGHTTP2_HEADERS ? stream_of(session, frame->hd.stream_id) : nullptr;
        if (stream == nullptr || !stream->in_response_headers) {
            return 0;
        }
        stream->last_progress = std::chrono::steady_clock::now();
        const std::string_view key(reinterpret_cast<const char*>(name), name_length);
        std::string text(reinterpret_cast<const char*>(value), value_length);
        auto& facts = stream->response.facts;
        if (key == ":status") {
            facts.status = static_cast<unsigned>(http_object::parse_number(text).value_or(0));
        } else if (key == "content-range") {
            facts.content_range = std::move(text);
        } else if (key == "etag") {
            facts.etag = std::move(text);
        } else if (key == "last-modified") {
            facts.last_modified = std::move(text);
        } else if (key == "location") {
            facts.location = std::move(text);
        } else if (key == "retry-after") {
            facts.retry_after = std::move(text);
        }
        return 0;
    }

    // Each response header block starts afresh: a final one replaces a 1xx.
    static int on_begin_headers(nghttp2_session* session, const nghttp2_frame* frame, void* /*user_data*/) {
        if (Stream* stream = response_headers_of(session, frame)) {
            stream->response.facts = {};
            stream->in_response_headers = true;
        }
        return 0;
    }

    static int on_data_chunk(nghttp2_session* session, std::uint8_t /*flags*/, std::int32_t stream_id,
                             const std::uint8_t* data, std::size_t length, void* /*user_data*/) {
        Stream* stream = stream_of(session, stream_id);
        if (stream == nullptr) {
            return 0;
        }
        auto& response = stream->response;
        if (response.facts.status != 206 || !response.outcome) {
            return 0; // an error page's body, or one already over-long: not the object's bytes
        }
        if (response.body_bytes + length > stream->dst.size()) {
            response.outcome = fail(errc::io_error, "the server sent more bytes than the range asked for");
            nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
            return 0;
        }
        stream->last_progress = std::chrono::steady_clock::now();
        // Tensor memory, written once: streaming stores (fenced after each receive batch).
        copy_to_destination_unfenced(stream->dst.data() + response.body_bytes, reinterpret_cast<const std::byte*>(data),
                                     length);
        response.body_bytes += length;
        return 0;
    }

    static int on_stream_close(nghttp2_session* /*session*/, std::int32_t stream_id, std::uint32_t error_code,
                               void* user_data) {
        auto* self = static_cast<Impl*>(user_data);
        auto found = self->streams.find(stream_id);
        if (found == self->streams.end()) {
            return 0;
        }
        auto stream = found->second;
        self->streams.erase(found);
        if (error_code == NGHTTP2_REFUSED_STREAM) {
            stream->response.refused = true;
        }
        if (error_code != NGHTTP2_NO_ERROR && stream->response.outcome) {
            stream->response.outcome =
                fail(errc::io_error, std::string("the stream was reset (") + nghttp2_http2_strerror(error_code) + ")");
        }
        stream->closed = true;
        stream->done.cancel();
        return 0;
    }

    static int on_frame(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
        auto* self = static_cast<Impl*>(user_data);
        if (frame->hd.type == NGHTTP2_GOAWAY) {
            // Streams above last_stream_id are closed by nghttp2 as refused; the rest finish,
            // then the connection closes (see drained()).
            self->draining = true;
        }
        if (frame->hd.type == NGHTTP2_HEADERS && (frame->hd.flags & NGHTTP2_FLAG_END_HEADERS) != 0) {
            Stream* stream = stream_of(session, frame->hd.stream_id);
            if (stream != nullptr) {
                stream->in_response_headers = false;
            }
            const unsigned status = stream != nullptr ? stream->response.facts.status : 0;
            if (status >= 200 && status != 206) {
                // Not range bytes (an error page, a redirect, a whole object): its headers
                // say all we need, and the body may be the whole multi-GB object.
                nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_CANCEL);
            }
        }
        return 0;
    }

    // After GOAWAY, once the last stream it let finish has: close, so that nothing waits on a
    // connection that takes no requests.
    bool drained() {
        if (draining && streams.empty() && !dead) {
            fail_all(peer + ": the server sent GOAWAY");
        }
        return dead;
    }

    Result<void> start_session() {
        nghttp2_session_callbacks* callbacks = nullptr;
        nghttp2_session_callbacks_new(&callbacks);
        nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks, on_begin_headers);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data_chunk);
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_stream_close);
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, on_frame);
        const int created = nghttp2_session_client_new(&session, callbacks, this);
        nghttp2_session_callbacks_del(callbacks);
        if (created != 0) {
            return fail(errc::io_error, peer + ": cannot start an HTTP/2 session: " + nghttp2_strerror(created));
        }
        const nghttp2_settings_entry entries[] = {
            {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
            {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, settings.stream_window_bytes},
            {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, (1U << 24) - 1}, // fewer, larger DATA frames if the server agrees
        };
        nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, entries, std::size(entries));
        nghttp2_session_set_local_window_size(session, NGHTTP2_FLAG_NONE, 0,
                                              static_cast<std::int32_t>(settings.connection_window_bytes));
        return {};
    }

    // Fails every stream in flight (what arrived stays counted) and takes no more requests.
    void fail_all(const std::string& why) {
        if (!dead || dead_reason.empty()) {
            dead_reason = why;
        }
        dead = true;
        auto failing = std::move(streams);
        streams.clear();
        for (auto& [id, stream] : failing) {
            nghttp2_session_set_stream_user_data(session, id, nullptr);
            if (stream->response.outcome) {
                stream->response.outcome = fail(errc::io_error, why);
            }
            // Never answered (a connection the server dropped while idle, say): safe to resend.
            stream->response.refused = stream->response.facts.status == 0 && stream->response.body_bytes == 0;
            stream->closed = true;
            stream->done.cancel();
        }
        boost::system::error_code ignored;
        tcp().socket().close(ignored);
        watchdog.cancel();
    }

    // Sends whatever the session has queued; one writer at a time, the others leave it to it.
    Task<void> flush(std::shared_ptr<Http2Connection> keep_alive) {
        (void)keep_alive;
        if (writing) {
            co_return;
        }
        writing = true;
        while (!dead) {
            send_buffer.clear();
            for (;;) {
                const std::uint8_t* data = nullptr;
                const auto n = nghttp2_session_mem_send(session, &data);
                if (n < 0) {
                    fail_all(peer + ": HTTP/2 error: " + nghttp2_strerror(static_cast<int>(n)));
                    break;
                }
                if (n == 0) {
                    break;
                }
                send_buffer.insert(send_buffer.end(), data, data + n);
            }
            if (send_buffer.empty() || dead) {
                break; // (refused streams closed during mem_send may have drained it)
            }
            tcp().expires_after(settings.timeout);
            auto buffer = asio::buffer(send_buffer);
            auto writing_op = link.visit([&](auto& s) { return asio::async_write(s, buffer, use_task); });
            auto [ec, written] = co_await std::move(writing_op);
            (void)written;
            if (ec) {
                fail_all(peer + ": connection lost while sending: " + ec.message());
            }
        }
        writing = false;
        drained();
    }

    void schedule_flush(const std::shared_ptr<Http2Connection>& self) {
        // Most reads leave nothing to send (WINDOW_UPDATEs come every half window).
        if (!writing && !dead && nghttp2_session_want_write(session) != 0) {
            asio::co_spawn(executor, flush(self), asio::detached);
        }
    }

    // Feeds the session until the connection ends.
    Task<void> read_loop(std::shared_ptr<Http2Connection> self) {
        while (!dead) {
            tcp().expires_never(); // stalls are the watchdog's business
            auto window = asio::buffer(receive_buffer.data(), receive_buffer.size());
            auto reading = link.visit([&](auto& s) { return s.async_read_some(window, use_task); });
            auto [ec, n] = co_await std::move(reading);
            if (dead) {
                break;
            }
            if (n > 0) {
                last_progress = std::chrono::steady_clock::now();
                const auto fed =
                    nghttp2_session_mem_recv(session, reinterpret_cast<const std::uint8_t*>(receive_buffer.data()), n);
                streaming_fence(); // DATA went out with streaming stores; readers run after this
                if (fed < 0) {
                    fail_all(peer + ": HTTP/2 protocol error: " + nghttp2_strerror(static_cast<int>(fed)));
                    break;
                }
                schedule_flush(self);
                if (drained()) {
                    break;
                }
            }
            if (ec) {
                fail_all(peer + ": connection lost: " + ec.message());
                break;
            }
            if (!streams.empty() || nghttp2_session_want_read(session) != 0) {
                continue;
            }
            break; // the session is over (GOAWAY answered, nothing left)
        }
        if (!dead) {
            fail_all(peer + ": the connection was closed");
        }
    }

    // Fails the connection when streams wait and nothing has come for the timeout; checks a
    // few times per timeout.
    Task<void> watch(std::shared_ptr<Http2Connection> self) {
        const auto period = std::max<std::chrono::milliseconds>(settings.timeout / 4, std::chrono::milliseconds(10));
        while (!dead) {
            watchdog.expires_after(period);
            auto waited = co_await watchdog.async_wait(use_task);
            (void)waited;
            const auto now = std::chrono::steady_clock::now();
            const std::string silence = "no data for " + std::to_string(settings.timeout.count()) + " ms";
            if (!dead && !streams.empty() && now - last_progress > settings.timeout) {
                fail_all(peer + ": " + silence);
                continue;
            }
            bool reset_any = false;
            for (auto& [id, stream] : streams) {
                if (now - stream->last_progress > settings.timeout && stream->response.outcome) {
                    stream->response.outcome = fail(errc::io_error, peer + ": " + silence + " on this request");
                    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
                    reset_any = true;
                }
            }
            if (reset_any) {
                schedule_flush(self); // the RST_STREAMs; their close callbacks end the waits
            }
        }
    }

    // TCP, then for https TLS offering h2 (and http/1.1 when allowed): a server whose ALPN
    // settles on anything else is FailureKind::http1_only.
    Task<NetResult<void>> connect(tcp::resolver::results_type endpoints, Url url) {
        peer = url.host_header;
        ConnectSettings connect_settings;
        connect_settings.timeout = settings.timeout;
        connect_settings.insecure = settings.insecure;
        connect_settings.alpn = settings.allow_http1 ? std::span<const unsigned char>(alpn_h2_or_http1)
                                                     : std::span<const unsigned char>(alpn_h2);
        // A larger receive buffer keeps the window of a fast loopback or LAN link full.
        connect_settings.receive_buffer_bytes = 8 << 20;
        auto connecting = connect_stream(link, std::move(endpoints), std::move(url), connect_settings);
        auto connected = co_await std::move(connecting);
        if (!connected || !link.is_tls()) {
            co_return connected;
        }
        const std::string_view protocol = link.alpn_selected();
        if (protocol != "h2") {
            co_return NetError{
                fail(errc::unsupported, peer + " does not speak HTTP/2 over TLS (ALPN chose " +
                                            (protocol.empty() ? std::string("nothing") : std::string(protocol)) + ")"),
                FailureKind::http1_only};
        }
        co_return NetResult<void>();
    }
};

Http2Connection::Http2Connection(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Http2Connection::~Http2Connection() = default;

Task<NetResult<std::shared_ptr<Http2Connection>>> Http2Connection::open(asio::any_io_executor loop,
                                                                        tcp::resolver::results_type endpoints, Url url,
                                                                        asio::ssl::context* tls,
                                                                        Http2Settings settings) {
    auto impl = std::make_unique<Impl>(loop, tls, settings);
    Impl& state = *impl;
    auto connecting = state.connect(endpoints, url);
    RL_CO_TRY_VOID(co_await std::move(connecting));
    if (auto started = state.start_session(); !started) {
        co_return NetError{started.error(), FailureKind::fatal};
    }
    std::shared_ptr<Http2Connection> connection(new Http2Connection(std::move(impl)));
    asio::co_spawn(loop, state.read_loop(connection), asio::detached);
    asio::co_spawn(loop, state.watch(connection), asio::detached);
    state.schedule_flush(connection); // the preface and SETTINGS
    co_return connection;
}

bool Http2Connection::usable() const {
    return !impl_->dead && !impl_->draining;
}

bool Http2Connection::closed() const {
    return impl_->dead;
}

std::size_t Http2Connection::streams_in_flight() const {
    return impl_->streams.size();
}

void Http2Connection::close() {
    if (!impl_->dead) {
        impl_->fail_all(impl_->peer + ": closed");
    }
}

Task<Http2Response> Http2Connection::get(const Url& url, const std::string& range, const std::vector<Header>& headers,
                                         std::span<std::byte> dst) {
    Impl& state = *impl_;
    auto self = shared_from_this(); // the connection outlives the request
    auto stream = std::make_shared<Stream>(state.executor);
    stream->dst = dst;
    if (state.dead || state.draining) {
        stream->response.outcome =
            fail(errc::io_error, state.dead ? state.dead_reason : state.peer + ": the server sent GOAWAY");
        stream->response.refused = true;
        co_return stream->response;
    }
    const std::string method = "GET";
    const std::string scheme = url.scheme;
    const std::string agent = user_agent;
    static const std::string names[] = {":method", ":scheme", ":authority", ":path", "user-agent", "range"};
    std::vector<nghttp2_nv> nv = {header_pair(names[0], method), header_pair(names[1], scheme),
                                  header_pair(names[2], url.host_header), header_pair(names[3], url.target),
                                  header_pair(names[4], agent)};
    if (!range.empty()) {
        nv.push_back(header_pair(names[5], range));
    }
    std::vector<Header> lowered = headers; // HTTP/2 field names are lower case
    for (auto& [name, value] : lowered) {
        for (char& c : name) {
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        nv.push_back(header_pair(name, value));
    }
    const std::int32_t id = nghttp2_submit_request(state.session, nullptr, nv.data(), nv.size(), nullptr, stream.get());
    if (id < 0) {
        stream->response.outcome =
            fail(errc::io_error, state.peer + ": cannot start an HTTP/2 request: " + nghttp2_strerror(id));
        stream->response.refused = true;
        co_return stream->response;
    }
    if (state.streams.empty()) {
        state.last_progress = std::chrono::steady_clock::now(); // the wait starts now
    }
    state.streams.emplace(id, stream);
    state.schedule_flush(self);
    while (!stream->closed) {
        auto waited = co_await stream->done.async_wait(use_task);
        (void)waited;
    }
    co_return stream->response;
}

} // namespace ringload
