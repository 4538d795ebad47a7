// io/src/http_source.cpp
#include "ringload/io/http_source.hpp"

#include "connect.hpp"
#include "connection_pool.hpp"
#include "http_object.hpp"
#include "http_retry.hpp"
#include "network_source.hpp"
#include "retry_policy.hpp"
#include "ringload/io/url.hpp"
#include "tls_context.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace ringload {
namespace {

namespace beast = boost::beast;
using namespace http_object;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using ResponseHeadParser = http::response_parser<http::buffer_body>;

// One keep-alive connection: plain TCP, or TLS over it for https.
struct Connection {
    Connection(asio::any_io_executor loop, asio::ssl::context* tls_context) : stream(std::move(loop), tls_context) {}
    beast::tcp_stream& tcp() { return stream.tcp(); }

    ClientStream stream;
    beast::flat_buffer buffer; // bytes read past a response header belong to its body
    bool connected = false;
    std::uint64_t origin = 0; // which host it talks to (HttpSource::origin_), see redirects
};

// What one range request came to. A reused (keep-alive) connection that failed before any
// response is FailureKind::unsent: try a fresh one at once.
struct Exchange : Attempt {
    bool reusable = false; // the connection may serve the next request
};

class HttpSource final : public NetworkSource {
public:
    HttpSource(asio::io_context& loop, Url url, HttpSourceOptions options)
        : url_(std::move(url)),
          name_(uri_for_messages(url_.text())), // what messages show: no signature
          options_(options),
          object_(name_),
          backoff_(options_.backoff_base, options_.backoff_max),
          connections_(loop.get_executor(), options_.connections) {}

    const std::string& name() const override { return name_; }
    std::uint64_t size_bytes() const override { return object_.size_bytes(); }
    std::string version() const override { return object_.version(); }
    // 8 MiB range requests by default: 1.5 GB/s on loopback against 1.3 with 4 MiB (fewer
    // round trips).
    std::size_t preferred_read_bytes() const override { return options_.range_size_bytes; }
    std::string describe() const override {
        return "HTTP/1.1, " + std::to_string(options_.connections) + " connections";
    }

    // Resolves the host, then asks for byte 0 to learn the size and the validator.
    Task<Result<void>> open() {
        if (url_.scheme == "https") {
            RL_CO_TRY(context, make_client_tls_context(options_.ca_file, options_.insecure));
            tls_context_ = std::move(context);
        }
        auto resolving = resolve_endpoints(url_.host, url_.port);
        auto resolved = co_await std::move(resolving);
        if (!resolved) {
            co_return fail(errc::io_error, name_ + ": cannot resolve " + url_.host + ": " + resolved.error().detail);
        }
        endpoints_ = std::move(*resolved);
        if (options_.open_without_reading) {
            auto asking = learn_by_head();
            if (co_await std::move(asking)) {
                co_return Result<void>();
            }
            // No usable answer to HEAD (a URL presigned for GET alone): the range GET below tells.
        }
        std::vector<std::byte> head(head_bytes);
        RL_CO_TRY(got, co_await read_range(0, head));
        keep_head(std::span<const std::byte>(head).first(got));
        co_return Result<void>();
    }

private:
    // The object's size and validator from a HEAD, following redirects: no byte of it read.
    // False where no 200 with a Content-Length comes back.
    Task<bool> learn_by_head() {
        for (std::size_t hop = 0; hop <= max_redirects; ++hop) {
            auto connection = co_await acquire();
            auto asking = head_exchange(*connection);
            Result<HeadAnswer> answer = co_await std::move(asking);
            release(std::move(connection), false); // the one HEAD it carries; reads open their own
            if (!answer) {
                co_return false;
            }
            if (is_redirect(answer->facts.status) && !answer->facts.location.empty()) {
                auto following = follow_redirect(answer->facts.location);
                if (!co_await std::move(following)) {
                    co_return false;
                }
                continue;
            }
            if (answer->facts.status != 200 || !answer->content_length) {
                co_return false;
            }
            object_.pin_whole(*answer->content_length, answer->facts);
            co_return true;
        }
        co_return false;
    }

    Task<std::unique_ptr<Connection>> acquire() {
        auto acquiring = connections_.acquire([this](asio::any_io_executor loop) {
            auto connection = std::make_unique<Connection>(std::move(loop), tls_context_.get());
            connection->origin = origin_;
            return connection;
        });
        co_return co_await std::move(acquiring);
    }

    void release(std::unique_ptr<Connection> connection, bool reusable) {
        if (connection->origin != origin_) {
            connections_.discard(std::move(connection)); // to a host redirected away from
        } else {
            connections_.release(std::move(connection), reusable);
        }
    }

    Task<Result<std::size_t>> read_range(std::uint64_t offset_bytes, std::span<std::byte> dst) override {
        const std::size_t length = object_.readable_length(offset_bytes, dst.size());
        if (length == 0) {
            co_return std::size_t{0};
        }
        if (sequential_) {
            auto read = sequential_read(offset_bytes, dst.first(length));
            co_return co_await std::move(read);
        }
        const auto abandoned = abandonment_.watch_from_now();
        auto reading = retry_range(
            name_, options_.attempts, 1, backoff_,
            [this, offset_bytes, dst, length, abandoned]() -> Task<Exchange> {
                auto connection = co_await acquire();
                if (abandoned()) { // its run stopped while it waited for a connection
                    release(std::move(connection), true);
                    Exchange out;
                    out.failed(abandoned_read(name_), FailureKind::fatal);
                    co_return out;
                }
                busy_.insert(connection.get()); // abandon_reads closes it
                auto request = exchange(*connection, offset_bytes, dst.first(length));
                Exchange done = co_await std::move(request);
                busy_.erase(connection.get());
                release(std::move(connection), done.reusable);
                co_return done;
            },
            [this](const std::string& location) { return follow_redirect(location); }, abandoned);
        co_return co_await std::move(reading);
    }

    // The requests in flight end now (their sockets closed: the exchanges fail and are not
    // retried); those of a later run start afresh.
    void abandon_reads() override {
        abandonment_.abandon();
        for (Connection* connection : busy_) {
            close_socket(*connection);
        }
        if (stream_) {
            close_socket(*stream_);
        }
    }

    static void close_socket(Connection& connection) {
        boost::system::error_code ignored;
        connection.tcp().socket().close(ignored);
    }

    // Points every later request at `location` (absolute, or relative to the current URL):
    // presigned URLs and CDNs answer the first request with a redirect. Connections to the old
    // host are dropped as they come back.
    Task<Result<void>> follow_redirect(const std::string& location) {
        RL_CO_TRY(parsed, resolve_redirect(url_, location, name_));
        if (parsed.host != url_.host || parsed.port != url_.port) {
            auto resolving = resolve_endpoints(parsed.host, parsed.port);
            auto resolved = co_await std::move(resolving);
            if (!resolved) {
                co_return fail(errc::io_error, name_ + ": redirected to " + parsed.host_header +
                                                   ", which cannot be resolved: " + resolved.error().detail);
            }
            endpoints_ = std::move(*resolved);
            ++origin_;
            connections_.forget(); // those in flight are dropped on release
        }
        url_ = std::move(parsed);
        co_return Result<void>();
    }

    // One GET with a Range header on `connection`, its body straight into `dst`.
    Task<Exchange> exchange(Connection& connection, std::uint64_t offset_bytes, std::span<std::byte> dst) {
        const bool reused = connection.connected;
        if (!connection.connected) {
            auto connecting = connect(connection);
            Exchange failed = co_await std::move(connecting);
            if (!failed.bytes) {
                co_return failed;
            }
            connection.connected = true;
        }
        auto signing = sign(url_, range_header_value(offset_bytes, dst.size()));
        auto signed_get = co_await std::move(signing);
        if (!signed_get) {
            Exchange failed;
            failed.failed(signed_get.error(), FailureKind::fatal);
            co_return failed;
        }
        auto request = connection.stream.visit([&](auto& stream) {
            return exchange_on(stream, connection, reused, offset_bytes, dst, std::move(*signed_get));
        });
        co_return co_await std::move(request);
    }

    // A GET as signed: the URL the signer saw, which is where it goes (a signer may wait, for a
    // token, and a redirect meanwhile must not send it elsewhere), the Range it signed, which is
    // the one sent ("" for none), and its headers (none without a signer).
    struct SignedGet {
        Url url;
        std::string range;
        std::vector<HttpSourceOptions::Header> headers;
    };
    Task<Result<SignedGet>> sign(Url url, std::string range) {
        auto signing = sign_get(options_, url, range);
        RL_CO_TRY(headers, co_await std::move(signing));
        co_return SignedGet{std::move(url), std::move(range), std::move(headers)};
    }

    struct HeadAnswer {
        ResponseFacts facts;
        std::optional<std::uint64_t> content_length;
    };

    Task<Result<HeadAnswer>> head_exchange(Connection& connection) {
        if (!connection.connected) {
            auto connecting = connect(connection);
            Exchange failed = co_await std::move(connecting);
            if (!failed.bytes) {
                co_return failed.bytes.error();
            }
            connection.connected = true;
        }
        auto signing = sign_request_as(options_, "HEAD", url_, "");
        RL_CO_TRY(headers, co_await std::move(signing));
        SignedGet head{url_, "", std::move(headers)};
        auto asking =
            connection.stream.visit([&](auto& stream) { return head_on(stream, connection, std::move(head)); });
        co_return co_await std::move(asking);
    }

    template <class Stream>
    Task<Result<HeadAnswer>> head_on(Stream& stream, Connection& connection, SignedGet head) {
        std::optional<ResponseHeadParser> parser;
        auto sending = send_request(stream, connection, http::verb::head, nullptr, std::move(head), parser);
        const boost::system::error_code ec = co_await std::move(sending);
        if (ec) {
            co_return fail(errc::io_error, name_ + ": HEAD: " + no_response(ec, parser));
        }
        const auto& response = parser->get();
        co_return HeadAnswer{facts_of(response), parse_number(response[http::field::content_length])};
    }

    // Sends a GET for the object (with `range` as its Range header, if given) and reads the
    // final response's header into `parser`; the body is left to the caller. Interim 1xx
    // responses (100 Continue, 103 Early Hints) are heads without bodies that may come first:
    // each is passed over, and a fresh parser reads the next (Beast's parser is done after one).
    template <class Stream>
    Task<boost::system::error_code> send_get(Stream& stream, Connection& connection, const std::string* range,
                                             SignedGet get, std::optional<ResponseHeadParser>& parser) {
        auto sending = send_request(stream, connection, http::verb::get, range, std::move(get), parser);
        co_return co_await std::move(sending);
    }

    // send_get's request with another method (HEAD: learn_by_head).
    template <class Stream>
    Task<boost::system::error_code> send_request(Stream& stream, Connection& connection, http::verb method,
                                                 const std::string* range, SignedGet get,
                                                 std::optional<ResponseHeadParser>& parser) {
        http::request<http::empty_body> request{method, get.url.target, 11};
        request.set(http::field::host, get.url.host_header);
        request.set(http::field::user_agent, user_agent);
        if (range != nullptr) {
            request.set(http::field::range, *range);
        }
        for (const auto& [name, value] : get.headers) {
            request.set(name, value);
        }
        connection.tcp().expires_after(options_.timeout);
        auto [write_ec, written] = co_await http::async_write(stream, request, use_task);
        (void)written;
        if (write_ec) {
            co_return write_ec;
        }
        for (int interim = 0;; ++interim) {
            parser.emplace();
            parser->body_limit(std::numeric_limits<std::uint64_t>::max());
            connection.tcp().expires_after(options_.timeout);
            auto [header_ec, header_bytes] =
                co_await http::async_read_header(stream, connection.buffer, *parser, use_task);
            (void)header_bytes;
            if (header_ec || !is_interim(parser->get().result_int())) {
                co_return header_ec;
            }
            if (interim == max_interim_responses) {
                // A server that only ever says "wait": refused, not read for ever.
                co_return boost::system::errc::make_error_code(boost::system::errc::protocol_error);
            }
        }
    }

    // Why send_get found no final response.
    static std::string no_response(const boost::system::error_code& ec, const std::optional<ResponseHeadParser>& head) {
        if (head && head->is_header_done() && is_interim(head->get().result_int())) {
            return "no final response after " + std::to_string(max_interim_responses + 1) + " interim (1xx) responses";
        }
        return "no response: " + ec.message();
    }

    // TCP connect, then for https the TLS handshake (connect.hpp) offering ALPN http/1.1.
    Task<Exchange> connect(Connection& connection) {
        ConnectSettings settings;
        settings.timeout = options_.timeout;
        settings.insecure = options_.insecure;
        settings.alpn = alpn_http1;
        Exchange out;
        auto connecting = connect_stream(connection.stream, endpoints_, url_, settings);
        auto connected = co_await std::move(connecting);
        if (!connected) {
            const NetError& failure = connected.error();
            out.failed(fail(failure.error.code, name_ + ": " + failure.error.detail), failure.kind);
        }
        co_return out;
    }

    // One GET with a Range header on an open connection, its body straight into `dst`.
    template <class Stream>
    Task<Exchange> exchange_on(Stream& stream, Connection& connection, bool reused, std::uint64_t offset_bytes,
                               std::span<std::byte> dst, SignedGet get) {
        Exchange out;
        const std::string range = get.range;
        std::optional<ResponseHeadParser> final_head;
        auto sending = send_get(stream, connection, &range, std::move(get), final_head);
        const boost::system::error_code read_ec = co_await std::move(sending);
        if (read_ec) {
            // A keep-alive connection the server closed meanwhile fails here: worth one resend.
            out.failed(object_.range_error(no_response(read_ec, final_head), offset_bytes, dst.size()),
                       reused ? FailureKind::unsent : transport_failure_kind(read_ec));
            co_return out;
        }
        ResponseHeadParser& parser = *final_head;
        auto& response = parser.get();
        if (is_redirect(response.result_int()) && !response[http::field::location].empty()) {
            out.redirect = std::string(response[http::field::location]);
            co_return out; // the body is not read: the connection is not reusable
        }
        if (!object_.known() && response.result_int() == 200) {
            // The server ignores Range: learn the size from the whole body's length, read nothing
            // of it here, and serve every read from one streaming GET (sequential_read).
            auto whole = parser.content_length();
            if (!whole || parser.chunked()) {
                out.failed(fail(errc::io_error, name_ + ": the server ignores Range and sends no Content-Length"),
                           FailureKind::fatal);
                co_return out;
            }
            object_.pin_whole(*whole, facts_of(response));
            sequential_ = true;
            co_return out;
        }
        const ResponseFacts facts = facts_of(response);
        auto checked = object_.check_range(facts, offset_bytes, dst.size());
        if (!checked) {
            auto refusing = refused(connection, parser, facts, checked.error());
            out = co_await std::move(refusing);
            co_return out; // the body is not read: the connection is not reusable
        }
        auto reading = read_range_body(connection, parser, offset_bytes, dst);
        co_return co_await std::move(reading);
    }

    // A response that is not the range: its error, explained by options_.explain_error when its
    // body says more (S3's <Code>: <Message>), retried when its status is retryable.
    Task<Exchange> refused(Connection& connection, ResponseHeadParser& parser, ResponseFacts facts, Error error) {
        Exchange out;
        auto explaining = explain_refusal(connection, parser);
        const std::string why = co_await std::move(explaining);
        if (!why.empty()) {
            error.detail += " (" + why + ")";
        }
        out.failed(std::move(error),
                   retryable_status(facts.status) ? FailureKind::status_retryable : FailureKind::fatal);
        out.retry_after = retry_after_of(facts);
        co_return out;
    }

    // The 206 body, straight into `dst`.
    Task<Exchange> read_range_body(Connection& connection, ResponseHeadParser& parser, std::uint64_t offset_bytes,
                                   std::span<std::byte> dst) {
        Exchange out;
        const auto content_length = parser.content_length();
        if (!content_length || parser.chunked() || *content_length > dst.size()) {
            out.failed(
                object_.range_error("a 206 response whose body is not " + std::to_string(dst.size()) + " bytes long",
                                    offset_bytes, dst.size()),
                FailureKind::fatal);
            co_return out;
        }
        auto reading = read_body(connection, dst.first(static_cast<std::size_t>(*content_length)));
        auto [body_ec, got] = co_await std::move(reading);
        if (body_ec) {
            // Cut mid-body: what arrived counts; the engine asks again from there.
            out.kind = transport_failure_kind(body_ec);
            out.bytes = got > 0 ? Result<std::size_t>(got)
                                : Result<std::size_t>(object_.range_error("the body was cut off: " + body_ec.message(),
                                                                          offset_bytes, dst.size()));
            co_return out;
        }
        out.reusable = parser.keep_alive();
        out.bytes = got;
        co_return out;
    }

    static FailureKind transport_failure_kind(const boost::system::error_code& ec) {
        return ec == beast::error::timeout ? FailureKind::timeout : FailureKind::reset;
    }

    // The hook's reading of a small body of a 4xx (or of a redirect without a Location); "" when
    // there is no hook. A body it cannot take (chunked, unsized, over 64 KiB) is given as empty,
    // so that what the hook says of the status alone (S3's wrong-region 301) still comes out.
    Task<std::string> explain_refusal(Connection& connection, ResponseHeadParser& parser) {
        const unsigned status = parser.get().result_int();
        const auto length = parser.content_length();
        const bool explained_status = (status >= 400 && status < 500) || is_redirect(status);
        if (!options_.explain_error || !explained_status) {
            co_return std::string();
        }
        if (!length || parser.chunked() || *length > 64 * 1024) {
            co_return options_.explain_error(status, {});
        }
        std::vector<std::byte> body(static_cast<std::size_t>(*length));
        auto reading = read_body(connection, body);
        auto [ec, got] = co_await std::move(reading);
        (void)ec;
        co_return options_.explain_error(status, std::string_view(reinterpret_cast<const char*>(body.data()), got));
    }

    template <class Response>
    static ResponseFacts facts_of(const Response& response) {
        ResponseFacts facts;
        facts.status = response.result_int();
        facts.reason = std::string(response.reason());
        facts.content_range = std::string(response[http::field::content_range]);
        facts.etag = std::string(response[http::field::etag]);
        facts.last_modified = std::string(response[http::field::last_modified]);
        facts.location = std::string(response[http::field::location]);
        facts.retry_after = std::string(response[http::field::retry_after]);
        return facts;
    }

    // ---- Servers that ignore Range: one streaming GET serves the reads in offset order. ----
    struct SequentialRequest {
        SequentialRequest(asio::any_io_executor loop, std::uint64_t offset, std::span<std::byte> bytes,
                          std::function<bool()> abandoned_check)
            : offset_bytes(offset), dst(bytes), abandoned(std::move(abandoned_check)), done(loop) {
            done.expires_at(asio::steady_timer::time_point::max());
        }
        std::uint64_t offset_bytes;
        std::span<std::byte> dst;
        std::function<bool()> abandoned; // its run stopped: not served
        asio::steady_timer done;
        std::optional<Result<std::size_t>> result;
    };

    // `dst` ends at the object's end at most (read_range trims it).
    Task<Result<std::size_t>> sequential_read(std::uint64_t offset_bytes, std::span<std::byte> dst) {
        auto loop = co_await asio::this_coro::executor;
        auto request = std::make_shared<SequentialRequest>(loop, offset_bytes, dst, abandonment_.watch_from_now());
        pending_.emplace(offset_bytes, request);
        if (!pumping_) {
            pumping_ = true;
            asio::co_spawn(loop, pump(), asio::detached);
        }
        while (!request->result) {
            auto waited = co_await request->done.async_wait(use_task);
            (void)waited;
        }
        co_return std::move(*request->result);
    }

    // Serves pending reads lowest offset first, so that the stream only moves forward while the
    // engine asks in order (a read behind the stream restarts it from byte 0).
    Task<void> pump() {
        while (!pending_.empty()) {
            auto request = pending_.begin()->second;
            pending_.erase(pending_.begin());
            auto serving = serve_in_order(*request);
            request->result = co_await std::move(serving);
            request->done.cancel();
        }
        pumping_ = false;
    }

    Task<Result<std::size_t>> serve_in_order(SequentialRequest& request) {
        std::optional<Error> last_error;
        for (std::size_t attempt = 1; attempt <= options_.attempts; ++attempt) {
            if (attempt > 1) {
                auto pause = pause_before_retry(backoff_, attempt - 1, std::chrono::milliseconds(0), request.abandoned);
                co_await std::move(pause);
            }
            if (request.abandoned()) {
                co_return abandoned_read(name_);
            }
            if (!stream_ || stream_position_ > request.offset_bytes) {
                auto starting = start_stream();
                auto started = co_await std::move(starting);
                if (!started) {
                    last_error = started.error();
                    stream_.reset();
                    continue;
                }
            }
            // Forward to the request's offset, then into its bytes.
            std::vector<std::byte> skipped(
                static_cast<std::size_t>(std::min<std::uint64_t>(1 << 20, request.offset_bytes - stream_position_)));
            bool broken = false;
            while (stream_position_ < request.offset_bytes && !broken) {
                const auto n = static_cast<std::size_t>(
                    std::min<std::uint64_t>(skipped.size(), request.offset_bytes - stream_position_));
                auto reading = read_stream(std::span(skipped).first(n));
                auto got = co_await std::move(reading);
                broken = !got;
                if (got) {
                    stream_position_ += *got;
                } else {
                    last_error = got.error();
                }
            }
            if (broken) {
                stream_.reset();
                continue;
            }
            auto reading = read_stream(request.dst);
            auto got = co_await std::move(reading);
            if (!got) {
                last_error = got.error();
                stream_.reset();
                continue;
            }
            stream_position_ += *got;
            co_return *got;
        }
        Error error = *last_error;
        error.detail += " (gave up after " + std::to_string(options_.attempts) + " attempts)";
        co_return error;
    }

    // GET without Range on a fresh connection; the response must be the same whole object.
    Task<Result<void>> start_stream() {
        stream_.reset();
        auto loop = co_await asio::this_coro::executor;
        auto connection = std::make_unique<Connection>(loop, tls_context_.get());
        auto connecting = connect(*connection);
        Exchange connected = co_await std::move(connecting);
        if (!connected.bytes) {
            co_return connected.bytes.error();
        }
        connection->connected = true;
        auto signing = sign(url_, "");
        RL_CO_TRY(signed_get, co_await std::move(signing));
        auto requesting = connection->stream.visit(
            [&](auto& stream) { return start_get(stream, *connection, std::move(signed_get)); });
        RL_CO_TRY_VOID(co_await std::move(requesting));
        stream_ = std::move(connection);
        stream_position_ = 0;
        co_return Result<void>();
    }

    template <class Stream>
    Task<Result<void>> start_get(Stream& stream, Connection& connection, SignedGet get) {
        std::optional<ResponseHeadParser> final_head;
        auto sending = send_get(stream, connection, nullptr, std::move(get), final_head);
        const boost::system::error_code read_ec = co_await std::move(sending);
        if (read_ec) {
            co_return fail(errc::io_error, name_ + ": " + no_response(read_ec, final_head) + " to a GET");
        }
        const ResponseHeadParser& parser = *final_head;
        const auto& response = parser.get();
        const auto length = parser.content_length();
        if (response.result_int() != 200 || !length || !object_.same_whole(*length, facts_of(response))) {
            co_return fail(errc::io_error, name_ + ": object changed while loading (a GET answered HTTP " +
                                               std::to_string(response.result_int()) + " with " +
                                               std::to_string(length.value_or(0)) + " bytes)");
        }
        co_return Result<void>();
    }

    // Up to dst.size() bytes of the streaming body.
    Task<Result<std::size_t>> read_stream(std::span<std::byte> dst) {
        auto reading = read_body(*stream_, dst);
        auto [ec, got] = co_await std::move(reading);
        if (ec && got == 0) {
            co_return fail(errc::io_error, name_ + ": the body was cut off at byte " +
                                               std::to_string(stream_position_) + ": " + ec.message());
        }
        co_return got;
    }

    // Fills `dst` with body bytes: first those read along with the header, then socket reads
    // straight into `dst` (Beast's parser would read 512-byte pieces into its own buffer and
    // copy). Stops early at an error, which it returns with the count so far.
    Task<std::pair<boost::system::error_code, std::size_t>> read_body(Connection& connection,
                                                                      std::span<std::byte> dst) {
        std::size_t got = asio::buffer_copy(asio::buffer(dst.data(), dst.size()), connection.buffer.data());
        connection.buffer.consume(got);
        while (got < dst.size()) {
            connection.tcp().expires_after(options_.timeout);
            auto window = asio::buffer(dst.data() + got, dst.size() - got);
            auto reading =
                connection.stream.visit([&](auto& stream) { return stream.async_read_some(window, use_task); });
            auto [ec, n] = co_await std::move(reading);
            got += n;
            if (ec) {
                co_return std::pair{ec, got};
            }
        }
        co_return std::pair{boost::system::error_code(), got};
    }

    Url url_;
    std::string name_;
    HttpSourceOptions options_;
    tcp::resolver::results_type endpoints_;
    PinnedObject object_;
    Backoff backoff_;
    std::unique_ptr<asio::ssl::context> tls_context_; // https only
    // Servers that ignore Range.
    bool sequential_ = false;
    std::multimap<std::uint64_t, std::shared_ptr<SequentialRequest>> pending_;
    bool pumping_ = false;
    std::unique_ptr<Connection> stream_;
    std::uint64_t stream_position_ = 0;
    std::uint64_t origin_ = 0; // bumped when a redirect moves to another host
    ConnectionPool<Connection> connections_;
    std::set<Connection*> busy_; // with a request in flight
    Abandonment abandonment_;
};

} // namespace

Task<Result<std::unique_ptr<Source>>> open_http_source(asio::io_context& loop, std::string url,
                                                       HttpSourceOptions options) {
    RL_CO_TRY(parsed, parse_http_url(url));
    RL_CO_TRY_VOID(http_object::check_settings(url, options.connections, options.range_size_bytes));
    auto source = std::make_unique<HttpSource>(loop, std::move(parsed), options);
    auto handing_out = open_and_hand_out(std::move(source));
    co_return co_await std::move(handing_out);
}

} // namespace ringload
