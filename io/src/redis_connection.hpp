// io/src/redis_connection.hpp
//
// One connection to a Redis server, driven by the loop thread through Asio (no extra threads).
// A request is a batch of pipelined commands written at once; its replies are read in order:
//   - small replies (AUTH, SCAN, STRLEN) are parsed by hiredis's redisReader;
//   - GETRANGE replies go straight into the caller's buffers: the "$<n>\r\n" line is parsed
//     here and the body is read from the socket into the destination (bytes that arrived with
//     the line are copied once).
//
//     std::string wire;
//     append_redis_command(wire, {"GETRANGE", key, "0", "99"});
//     auto reading = connection.read_ranges(std::move(wire), targets);
//     auto done = co_await std::move(reading);
//
// Every wait for the server has a deadline (the timeout). After any failure the connection is
// in an unknown state and must be dropped; retryable() says whether a fresh connection may do
// better (connect errors, resets, timeouts) or not (an error reply, a key that changed size).
// Thread: the loop thread.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"
#include "ringload/io/redis_layout.hpp"

#include <hiredis/hiredis.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ringload {

// Appends one command in RESP (an array of bulk strings: binary-safe keys and values).
void append_redis_command(std::string& wire, std::span<const std::string_view> args);
inline void append_redis_command(std::string& wire, std::initializer_list<std::string_view> args) {
    append_redis_command(wire, std::span<const std::string_view>(args.begin(), args.size()));
}

// Limits on a short reply (anything but a GETRANGE body), which no honest server comes near:
// its bytes on the wire, and an array's elements (hiredis allocates an array's element pointers
// when it reads the "*<n>" header: "*2147483647" was a 16 GiB calloc, found by resp_fuzz).
constexpr std::size_t redis_short_reply_bytes_max = 8 << 20;
constexpr int redis_reply_elements_max = 1 << 20;
// Makes `reader` refuse arrays over redis_reply_elements_max (it then reports REDIS_ERR_OOM).
void bound_redis_reader(redisReader& reader);
// The message for a reader that failed.
std::string redis_reader_failure(const redisReader& reader);

struct RedisReplyFree {
    void operator()(redisReply* reply) const { freeReplyObject(reply); }
};
using RedisReply = std::unique_ptr<redisReply, RedisReplyFree>;

// Where one GETRANGE reply goes; the reply must be exactly dst.size() bytes long.
struct RedisRangeTarget {
    std::span<std::byte> dst;
    std::string_view key; // for messages
};

class RedisConnection {
public:
    // `name` (the redacted URI) starts every message.
    RedisConnection(asio::any_io_executor loop, std::string name, std::chrono::milliseconds timeout);
    ~RedisConnection();
    RedisConnection(const RedisConnection&) = delete;
    RedisConnection& operator=(const RedisConnection&) = delete;

    bool connected() const { return connected_; }
    bool retryable() const { return retryable_; }

    // Connects (TCP_NODELAY) and sends AUTH when the URI has a password.
    Task<Result<void>> connect(asio::ip::tcp::resolver::results_type endpoints, const RedisUri& uri);
    // Sends `wire` and returns its `reply_count` replies (error replies included, as replies).
    Task<Result<std::vector<RedisReply>>> exchange(std::string wire, std::size_t reply_count);
    // Sends `wire` (one GETRANGE per target) and reads each reply into its target.
    Task<Result<void>> read_ranges(std::string wire, std::span<const RedisRangeTarget> targets);
    // Ends what is in flight on it now: its waits fail (the connection is then dropped).
    void close();

private:
    Error transport_failure(const std::string& what, const boost::system::error_code& ec);
    Error protocol_failure(const std::string& what);
    Task<Result<void>> send(const std::string& wire);
    Task<Result<void>> read_more(std::chrono::steady_clock::time_point deadline);
    Task<Result<std::string>> read_line();
    Task<Result<void>> read_into(std::span<std::byte> dst);

    std::string name_;
    std::string endpoint_; // "host:port", known once connecting started
    std::chrono::milliseconds timeout_;
    boost::beast::tcp_stream stream_;
    boost::beast::flat_buffer buffer_; // bytes read and not yet handed on
    redisReader* reader_ = nullptr;
    bool connected_ = false;
    bool retryable_ = false;
};

} // namespace ringload
