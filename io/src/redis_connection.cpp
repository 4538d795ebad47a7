// io/src/redis_connection.cpp
#include "redis_connection.hpp"

#include "connect.hpp"

#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace ringload {

namespace beast = boost::beast;

namespace {
std::string seconds_text(std::chrono::milliseconds duration) {
    char text[32];
    std::snprintf(text, sizeof text, "%g s", static_cast<double>(duration.count()) / 1000.0);
    return text;
}

// hiredis's reply functions, with arrays over redis_reply_elements_max refused; made once from
// the defaults of the first reader.
redisReplyObjectFunctions* bounded_reply_functions(const redisReplyObjectFunctions& hiredis) {
    static const redisReplyObjectFunctions defaults = hiredis;
    static redisReplyObjectFunctions bounded = [] {
        redisReplyObjectFunctions functions = defaults;
        functions.createArray = [](const redisReadTask* task, int elements) -> void* {
            return elements > redis_reply_elements_max ? nullptr : defaults.createArray(task, elements);
        };
        return functions;
    }();
    return &bounded;
}
} // namespace

void bound_redis_reader(redisReader& reader) {
    reader.fn = bounded_reply_functions(*reader.fn);
}

std::string redis_reader_failure(const redisReader& reader) {
    return reader.err == REDIS_ERR_OOM ? "an array of more than " + std::to_string(redis_reply_elements_max) +
                                             " elements where a short reply was expected (or out of memory)"
                                       : std::string("not a Redis reply: ") + reader.errstr;
}

void append_redis_command(std::string& wire, std::span<const std::string_view> args) {
    wire += '*';
    wire += std::to_string(args.size());
    wire += "\r\n";
    for (std::string_view arg : args) {
        wire += '$';
        wire += std::to_string(arg.size());
        wire += "\r\n";
        wire.append(arg);
        wire += "\r\n";
    }
}

RedisConnection::RedisConnection(asio::any_io_executor loop, std::string name, std::chrono::milliseconds timeout)
    : name_(std::move(name)), timeout_(timeout), stream_(std::move(loop)), reader_(redisReaderCreate()) {
    RL_ASSERT(reader_ != nullptr, "redisReaderCreate failed (out of memory)");
    bound_redis_reader(*reader_);
}

RedisConnection::~RedisConnection() {
    redisReaderFree(reader_);
}

Error RedisConnection::transport_failure(const std::string& what, const boost::system::error_code& ec) {
    retryable_ = true;
    connected_ = false;
    std::string why = ec == beast::error::timeout ? "no answer within " + seconds_text(timeout_)
                      : ec == asio::error::eof    ? "the server closed the connection"
                                                  : ec.message();
    return fail(errc::io_error, name_ + ": " + endpoint_ + ": " + what + ": " + why);
}

Error RedisConnection::protocol_failure(const std::string& what) {
    retryable_ = false;
    connected_ = false;
    return fail(errc::io_error, name_ + ": " + endpoint_ + ": " + what);
}

Task<Result<void>> RedisConnection::connect(asio::ip::tcp::resolver::results_type endpoints, const RedisUri& uri) {
    endpoint_ = uri.endpoint();
    auto connecting = connect_tcp(stream_, std::move(endpoints), timeout_); // with TCP_NODELAY
    const boost::system::error_code ec = co_await std::move(connecting);
    if (ec) {
        co_return transport_failure("cannot connect", ec);
    }
    connected_ = true;
    if (uri.password.empty()) {
        co_return Result<void>();
    }
    std::string wire;
    if (uri.user.empty()) {
        append_redis_command(wire, {"AUTH", uri.password});
    } else {
        append_redis_command(wire, {"AUTH", uri.user, uri.password});
    }
    auto authenticating = exchange(std::move(wire), 1);
    RL_CO_TRY(replies, co_await std::move(authenticating));
    const redisReply& reply = *replies.front();
    if (reply.type == REDIS_REPLY_ERROR) {
        // The server's words ("WRONGPASS invalid username-password pair") never hold the password.
        co_return protocol_failure("AUTH refused: " + std::string(reply.str, reply.len));
    }
    co_return Result<void>();
}

Task<Result<void>> RedisConnection::send(const std::string& wire) {
    stream_.expires_after(timeout_);
    auto writing = asio::async_write(stream_, asio::buffer(wire), use_task);
    auto done = co_await std::move(writing);
    auto& [ec, n] = done;
    (void)n;
    if (ec) {
        co_return transport_failure("sending a request", ec);
    }
    co_return Result<void>();
}

// At least one more byte into buffer_, by `deadline`.
Task<Result<void>> RedisConnection::read_more(std::chrono::steady_clock::time_point deadline) {
    stream_.expires_at(deadline);
    auto reading = stream_.async_read_some(buffer_.prepare(64 << 10), use_task);
    auto done = co_await std::move(reading);
    auto& [ec, n] = done;
    buffer_.commit(n);
    if (ec && n == 0) {
        co_return transport_failure("waiting for a reply", ec);
    }
    co_return Result<void>();
}

void RedisConnection::close() {
    boost::system::error_code ignored;
    stream_.socket().close(ignored);
}

Task<Result<std::vector<RedisReply>>> RedisConnection::exchange(std::string wire, std::size_t reply_count) {
    auto sending = send(wire);
    RL_CO_TRY_VOID(co_await std::move(sending));
    // These replies are small (AUTH, SCAN pages, STRLENs): a server that trickles bytes or
    // sends without end (a 2^62-byte bulk string, an array of 2^30 elements, a line with no
    // end) must not hold us or grow hiredis's buffers and reply objects with its claim. So the
    // whole exchange has one deadline and each reply at most redis_short_reply_bytes_max bytes on the wire
    // (memory is within a small multiple of that).
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    std::vector<RedisReply> replies;
    replies.reserve(reply_count);
    std::size_t reply_bytes = 0; // fed to the reader since the last whole reply
    while (replies.size() < reply_count) {
        void* reply = nullptr;
        if (redisReaderGetReply(reader_, &reply) != REDIS_OK) {
            co_return protocol_failure(redis_reader_failure(*reader_));
        }
        if (reply != nullptr) {
            replies.emplace_back(static_cast<redisReply*>(reply));
            reply_bytes = reader_->len - reader_->pos;
            continue;
        }
        if (reply_bytes > redis_short_reply_bytes_max) {
            co_return protocol_failure("a reply longer than 8 MiB where a short one was expected");
        }
        if (buffer_.size() == 0) {
            auto reading = read_more(deadline);
            RL_CO_TRY_VOID(co_await std::move(reading));
        }
        const auto data = buffer_.data();
        if (redisReaderFeed(reader_, static_cast<const char*>(data.data()), data.size()) != REDIS_OK) {
            co_return protocol_failure("out of memory while parsing a reply");
        }
        reply_bytes += data.size();
        buffer_.consume(data.size());
    }
    co_return replies;
}

Task<Result<std::string>> RedisConnection::read_line() {
    constexpr std::size_t line_bytes_max = 64 << 10;
    const auto deadline = std::chrono::steady_clock::now() + timeout_; // a trickled line ends too
    for (;;) {
        const auto data = buffer_.data();
        const std::string_view text(static_cast<const char*>(data.data()), data.size());
        if (const auto end = text.find("\r\n"); end != std::string_view::npos) {
            std::string line(text.substr(0, end));
            buffer_.consume(end + 2);
            co_return line;
        }
        if (text.size() > line_bytes_max) {
            co_return protocol_failure("a reply line longer than 64 KiB");
        }
        auto reading = read_more(deadline);
        RL_CO_TRY_VOID(co_await std::move(reading));
    }
}

// Fills `dst`: buffered bytes first, then socket reads straight into it.
Task<Result<void>> RedisConnection::read_into(std::span<std::byte> dst) {
    std::size_t got = asio::buffer_copy(asio::buffer(dst.data(), dst.size()), buffer_.data());
    buffer_.consume(got);
    while (got < dst.size()) {
        stream_.expires_after(timeout_);
        auto reading = stream_.async_read_some(asio::buffer(dst.data() + got, dst.size() - got), use_task);
        auto done = co_await std::move(reading);
        auto& [ec, n] = done;
        got += n;
        if (ec && got < dst.size()) {
            co_return transport_failure("reading a reply", ec);
        }
    }
    co_return Result<void>();
}

Task<Result<void>> RedisConnection::read_ranges(std::string wire, std::span<const RedisRangeTarget> targets) {
    auto sending = send(wire);
    RL_CO_TRY_VOID(co_await std::move(sending));
    for (const RedisRangeTarget& target : targets) {
        auto reading_line = read_line();
        RL_CO_TRY(line, co_await std::move(reading_line));
        if (line.starts_with("-")) {
            co_return protocol_failure("GETRANGE on key '" + std::string(target.key) + "': " + line.substr(1));
        }
        long long length = -2;
        if (line.starts_with("$")) {
            auto [end, ec] = std::from_chars(line.data() + 1, line.data() + line.size(), length);
            if (ec != std::errc() || end != line.data() + line.size() || length < -1) {
                length = -2;
            }
        }
        if (length == -2) {
            co_return protocol_failure("GETRANGE on key '" + std::string(target.key) + "': an unexpected reply '" +
                                       line.substr(0, 40) + "'");
        }
        if (static_cast<std::size_t>(std::max(length, 0LL)) != target.dst.size()) {
            // The key was replaced, cut or grown since open (the request asks for one byte past
            // a key's end, so growth shows too); the stream still holds the body: dropped.
            co_return protocol_failure("key '" + std::string(target.key) + "' changed size while loading (" +
                                       std::to_string(std::max(length, 0LL)) + " bytes where " +
                                       std::to_string(target.dst.size()) + " were expected)");
        }
        if (length < 0) {
            continue; // nil ("$-1\r\n") has no body and no trailer; "$0\r\n\r\n" has both
        }
        auto reading_body = read_into(target.dst);
        RL_CO_TRY_VOID(co_await std::move(reading_body));
        std::byte trailer[2];
        auto reading_trailer = read_into(trailer);
        RL_CO_TRY_VOID(co_await std::move(reading_trailer));
        if (std::memcmp(trailer, "\r\n", 2) != 0) {
            co_return protocol_failure("a bulk reply without its CRLF");
        }
    }
    co_return Result<void>();
}

} // namespace ringload
