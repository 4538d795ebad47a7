// io/src/http2_source.cpp
#include "ringload/io/http2_source.hpp"
#include "ringload/io/url.hpp"

#include "connect.hpp"
#include "http2_connection.hpp"
#include "http_object.hpp"
#include "http_retry.hpp"
#include "network_source.hpp"
#include "retry_policy.hpp"
#include "tls_context.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <vector>

namespace ringload {
namespace {

using namespace http_object;
using tcp = asio::ip::tcp;

class Http2Source final : public NetworkSource {
public:
    Http2Source(asio::io_context& loop, Url url, HttpSourceOptions options, std::size_t streams, bool allow_http1)
        : url_(std::move(url)),
          name_(uri_for_messages(url_.text())), // what messages show: no signature
          options_(std::move(options)),
          streams_per_connection_(std::max<std::size_t>(streams, 1)),
          allow_http1_(allow_http1),
          object_(name_),
          backoff_(options_.backoff_base, options_.backoff_max),
          slot_freed_(loop) {
        slot_freed_.expires_at(asio::steady_timer::time_point::max());
    }
    ~Http2Source() override {
        for (auto& connection : connections_) {
            connection->close();
        }
    }

    const std::string& name() const override { return name_; }
    std::uint64_t size_bytes() const override { return object_.size_bytes(); }
    std::string version() const override { return object_.version(); }
    std::size_t preferred_read_bytes() const override { return options_.range_size_bytes; }
    std::string describe() const override {
        return std::string(url_.scheme == "https" ? "HTTP/2 over TLS, " : "HTTP/2 cleartext (h2c), ") +
               std::to_string(options_.connections) + " connections x " + std::to_string(streams_per_connection_) +
               " streams";
    }

    Task<Result<void>> open() {
        if (url_.scheme == "https") {
            RL_CO_TRY(context, make_client_tls_context(options_.ca_file, options_.insecure));
            tls_context_ = std::move(context);
        }
        auto resolving = resolve(url_);
        RL_CO_TRY_VOID(co_await std::move(resolving));
        // The first connection decides whether the server speaks HTTP/2 at all (ALPN).
        auto connecting = connect();
        auto first = co_await std::move(connecting);
        if (!first) {
            co_return first.error().error;
        }
        std::vector<std::byte> head(head_bytes);
        auto probe = read_range(0, head);
        auto got = co_await std::move(probe);
        if (!got) {
            Error error = got.error();
            if (!any_response_ && url_.scheme == "http") {
                error.detail +=
                    " (no HTTP/2 response: h2c needs a server that takes HTTP/2 with prior knowledge; "
                    "--http-version 1.1 for an HTTP/1.1 server)";
            }
            co_return error;
        }
        keep_head(std::span<const std::byte>(head).first(*got));
        co_return Result<void>();
    }

    // The server chose http/1.1 in ALPN, or ignores Range over HTTP/2: the HTTP/1.1 source can
    // read it (open_http2_source falls back when allowed).
    bool wants_http1() const { return wants_http1_; }

private:
    Task<Result<void>> resolve(Url url) {
        auto resolving = resolve_endpoints(url.host, url.port);
        auto resolved = co_await std::move(resolving);
        if (!resolved) {
            co_return fail(errc::io_error, name_ + ": cannot resolve " + url.host + ": " + resolved.error().detail);
        }
        endpoints_ = std::move(*resolved);
        co_return Result<void>();
    }

    Http2Settings settings() const {
        Http2Settings settings;
        settings.timeout = options_.timeout;
        settings.insecure = options_.insecure;
        settings.allow_http1 = allow_http1_;
        // A stream's window holds a whole range; the connection's all of its streams' ranges.
        const auto range = std::min<std::size_t>(options_.range_size_bytes, (1U << 31) - 1);
        settings.stream_window_bytes = static_cast<std::uint32_t>(std::max<std::size_t>(range, 1 << 20));
        settings.connection_window_bytes = static_cast<std::uint32_t>(
            std::min<std::size_t>(range * streams_per_connection_ + (1 << 20), (1U << 31) - 1));
        return settings;
    }

    Task<NetResult<std::shared_ptr<Http2Connection>>> connect() {
        ++connecting_;
        const std::uint64_t origin = origin_;
        auto loop = co_await asio::this_coro::executor;
        auto opening = Http2Connection::open(loop, endpoints_, url_, tls_context_.get(), settings());
        auto opened = co_await std::move(opening);
        --connecting_;
        slot_freed_.cancel(); // a waiter may now open one itself, or find this one
        if (!opened) {
            const NetError& failure = opened.error();
            wants_http1_ = wants_http1_ || failure.kind == FailureKind::http1_only;
            co_return NetError{fail(failure.error.code, name_ + ": " + failure.error.detail), failure.kind};
        }
        if (origin != origin_) { // a redirect moved every request elsewhere meanwhile
            (*opened)->close();
            co_return NetError{fail(errc::io_error, name_ + ": redirected while connecting"), FailureKind::reset};
        }
        connections_.push_back(*opened);
        co_return *opened;
    }

    // A connection with a free stream: an idle one, else a new one while fewer than
    // `connections` take requests, else the least busy (or, when connecting failed, any with
    // room).
    Task<NetResult<std::shared_ptr<Http2Connection>>> acquire() {
        for (;;) {
            std::erase_if(connections_, [](const auto& c) { return c->closed(); });
            std::shared_ptr<Http2Connection> best;
            std::size_t usable = 0;
            for (const auto& connection : connections_) {
                if (!connection->usable()) {
                    continue; // draining after GOAWAY: kept only to be closed with the source
                }
                ++usable;
                if (connection->streams_in_flight() < streams_per_connection_ &&
                    (!best || connection->streams_in_flight() < best->streams_in_flight())) {
                    best = connection;
                }
            }
            if (best && best->streams_in_flight() == 0) {
                co_return best;
            }
            if (usable + connecting_ < options_.connections) {
                auto connecting = connect();
                auto connected = co_await std::move(connecting);
                if (connected || !best || !best->usable()) {
                    co_return connected;
                }
                co_return best;
            }
            if (best) {
                co_return best;
            }
            auto waited = co_await slot_freed_.async_wait(use_task);
            (void)waited;
        }
    }

    Task<Result<std::size_t>> read_range(std::uint64_t offset_bytes, std::span<std::byte> dst) override {
        const std::size_t length = object_.readable_length(offset_bytes, dst.size());
        if (length == 0) {
            co_return std::size_t{0};
        }
        const auto abandoned = abandonment_.watch_from_now();
        auto reading = retry_range(
            name_, options_.attempts, options_.connections + 1, backoff_,
            [this, offset_bytes, dst, length, abandoned] {
                return try_range(offset_bytes, dst.first(length), abandoned);
            },
            [this](const std::string& location) { return follow_redirect(location); }, abandoned);
        co_return co_await std::move(reading);
    }

    // The streams in flight end now (their connections closed: they fail and are not
    // retried); a later run opens new connections.
    void abandon_reads() override {
        abandonment_.abandon();
        for (const auto& connection : connections_) {
            if (connection->streams_in_flight() > 0) {
                connection->close();
            }
        }
        slot_freed_.cancel();
    }

    Task<Attempt> try_range(std::uint64_t offset_bytes, std::span<std::byte> dst, std::function<bool()> abandoned) {
        Attempt out;
        // Signed before a connection is picked, for the URL it goes to: a signer may wait (for a
        // token), and neither a stream slot taken before the wait nor a redirect followed
        // meanwhile may change under it.
        const Url target = url_;
        const std::string range = range_header_value(offset_bytes, dst.size());
        auto signing = sign_get(options_, target, range);
        auto headers = co_await std::move(signing);
        if (!headers) {
            out.failed(headers.error(), FailureKind::fatal);
            co_return out;
        }
        auto acquiring = acquire();
        auto connection = co_await std::move(acquiring);
        if (!connection) {
            out.failed(connection.error().error, connection.error().kind);
            co_return out;
        }
        if (abandoned()) { // its run stopped while it waited for a stream
            out.failed(abandoned_read(name_), FailureKind::fatal);
            co_return out;
        }
        auto requesting = (*connection)->get(target, range, *headers, dst);
        Http2Response response = co_await std::move(requesting);
        slot_freed_.cancel(); // wakes every waiter; each looks again
        any_response_ = any_response_ || response.facts.status != 0;
        co_return judge(response, offset_bytes, dst);
    }

    // What a response to a range request comes to.
    Attempt judge(const Http2Response& response, std::uint64_t offset_bytes, std::span<std::byte> dst) {
        Attempt out;
        const auto& facts = response.facts;
        if (facts.status == 0) { // no response: the connection failed or went away
            out.failed(object_.range_error(response.outcome ? "no response" : response.outcome.error().detail,
                                           offset_bytes, dst.size()),
                       response.refused ? FailureKind::unsent : FailureKind::reset);
            return out;
        }
        if (is_redirect(facts.status) && !facts.location.empty()) {
            out.redirect = facts.location;
            return out; // without a Location, check_range refuses it
        }
        if (!object_.known() && facts.status == 200) {
            wants_http1_ = true;
            out.failed(fail(errc::unsupported, name_ + ": the server ignores Range requests over HTTP/2 "
                                                       "(--http-version 1.1 reads such a server sequentially)"),
                       FailureKind::http1_only);
            return out;
        }
        auto checked = object_.check_range(facts, offset_bytes, dst.size());
        if (!checked) {
            out.failed(checked.error(),
                       retryable_status(facts.status) ? FailureKind::status_retryable : FailureKind::fatal);
            out.retry_after = retry_after_of(facts);
            return out;
        }
        return judge_body(response, offset_bytes, dst);
    }

    // A 206's body against its Content-Range: whole, cut off (what arrived counts), or too long.
    Attempt judge_body(const Http2Response& response, std::uint64_t offset_bytes, std::span<std::byte> dst) {
        Attempt out;
        const auto content_range = parse_content_range(response.facts.content_range);
        const std::uint64_t promised = content_range->last - content_range->first + 1;
        if (promised > dst.size()) {
            out.failed(object_.range_error("a 206 response longer than the range asked for", offset_bytes, dst.size()),
                       FailureKind::fatal);
            return out;
        }
        if (response.body_bytes > promised) {
            out.failed(object_.range_error("the body is longer than its Content-Range (" +
                                               std::to_string(response.body_bytes) + " bytes)",
                                           offset_bytes, dst.size()),
                       FailureKind::fatal);
            return out;
        }
        if (!response.outcome || response.body_bytes < promised) {
            // Cut mid-body: what arrived counts; the engine asks again from there.
            out.kind = FailureKind::reset;
            out.bytes = response.body_bytes > 0
                            ? Result<std::size_t>(response.body_bytes)
                            : Result<std::size_t>(object_.range_error(
                                  "the body was cut off" +
                                      (response.outcome ? std::string() : ": " + response.outcome.error().detail),
                                  offset_bytes, dst.size()));
            return out;
        }
        out.bytes = response.body_bytes;
        return out;
    }

    Task<Result<void>> follow_redirect(const std::string& location) {
        RL_CO_TRY(parsed, resolve_redirect(url_, location, name_));
        if (parsed.host != url_.host || parsed.port != url_.port) {
            auto resolving = resolve(parsed);
            RL_CO_TRY_VOID(co_await std::move(resolving));
            for (auto& connection : connections_) {
                connection->close(); // streams in flight to the old host fail and are retried there
            }
            connections_.clear();
            ++origin_;
        }
        url_ = std::move(parsed);
        co_return Result<void>();
    }

    Url url_;
    std::string name_;
    HttpSourceOptions options_;
    std::size_t streams_per_connection_;
    bool allow_http1_;
    PinnedObject object_;
    Backoff backoff_;
    tcp::resolver::results_type endpoints_;
    std::unique_ptr<asio::ssl::context> tls_context_; // https only
    std::vector<std::shared_ptr<Http2Connection>> connections_;
    std::size_t connecting_ = 0;
    std::uint64_t origin_ = 0; // bumped when a redirect moves to another host
    bool any_response_ = false;
    bool wants_http1_ = false;
    asio::steady_timer slot_freed_;
    Abandonment abandonment_;
};

} // namespace

Task<Result<std::unique_ptr<Source>>> open_http2_source(asio::io_context& loop, std::string url,
                                                        HttpSourceOptions options, Http2SourceOptions http2) {
    RL_CO_TRY(parsed, parse_http_url(url));
    RL_CO_TRY_VOID(http_object::check_settings(url, options.connections, options.range_size_bytes));
    auto source = std::make_unique<Http2Source>(loop, std::move(parsed), options, http2.streams_per_connection,
                                                http2.allow_http1);
    auto opening = source->open();
    auto opened = co_await std::move(opening);
    if (opened) {
        co_return std::unique_ptr<Source>(std::move(source));
    }
    if (!http2.allow_http1 || !source->wants_http1()) {
        co_return opened.error();
    }
    source.reset(); // its connections close before the HTTP/1.1 source opens its own
    auto falling_back = open_http_source(loop, std::move(url), std::move(options));
    co_return co_await std::move(falling_back);
}

} // namespace ringload
