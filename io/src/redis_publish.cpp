// io/src/redis_publish.cpp
#include "ringload/io/redis_publish.hpp"

#include "posix_file.hpp"
#include "redis_connection.hpp" // append_redis_command, RedisReply
#include "retry_policy.hpp"
#include "ringload/io/redis_layout.hpp"

#include <hiredis/hiredis.h>

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <vector>

namespace ringload {
namespace {

constexpr std::size_t copy_bytes = 4 << 20;           // file bytes read per send
constexpr std::size_t replies_pending_max = 64;       // SETs sent before their replies are read
constexpr std::uint64_t bytes_pending_max = 64 << 20; // ... or this many bytes sent
constexpr std::size_t keys_per_command = 512;         // keys per DEL
// Temporary keys expire on their own after this (RENAME keeps it: the MULTI then PERSISTs each
// key it puts in place): a publisher killed mid-way leaves nothing for ever. A publish that
// takes more than half of it gives up before the switch, so that no temporary key can have
// expired under it.
constexpr std::chrono::hours temporary_key_lifetime{24};

struct ContextFree {
    void operator()(redisContext* context) const { redisFree(context); }
};

// One blocking connection. Requests are written here, with MSG_NOSIGNAL (hiredis's write()
// would raise SIGPIPE on a closed connection); hiredis reads and parses the replies.
class Session {
public:
    Session(const RedisUri& uri, const NetworkOptions& options) : uri_(uri), options_(options) {}

    // Connects (retried with backoff up to `attempts`) and authenticates.
    Result<void> connect() {
        timeval tv{};
        tv.tv_sec = static_cast<time_t>(options_.timeout_seconds);
        tv.tv_usec = static_cast<suseconds_t>((options_.timeout_seconds - static_cast<double>(tv.tv_sec)) * 1e6);
        Backoff backoff; // the network sources' backoff: 100 ms doubling up to 5 s, with jitter
        const std::size_t attempts = std::max<std::size_t>(options_.attempts, 1);
        for (std::size_t attempt = 1;; ++attempt) {
            context_.reset(redisConnectWithTimeout(uri_.host.c_str(), std::stoi(uri_.port), tv));
            if (context_ == nullptr) {
                return fail(errc::out_of_memory, uri_.text + ": cannot allocate a Redis context");
            }
            if (context_->err == 0) {
                break;
            }
            if (attempt >= attempts) {
                return fail(errc::io_error, uri_.text + ": " + uri_.endpoint() +
                                                ": cannot connect: " + context_->errstr + " (gave up after " +
                                                std::to_string(attempt) + " attempts)");
            }
            std::this_thread::sleep_for(backoff.delay(attempt)); // a blocking client: it sleeps
        }
        bound_redis_reader(*context_->reader);
        if (redisSetTimeout(context_.get(), tv) != REDIS_OK) {
            return fail(errc::io_error, uri_.text + ": " + uri_.endpoint() + ": cannot set the timeout");
        }
        const int nodelay = 1;
        ::setsockopt(context_->fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, sizeof nodelay);
        if (uri_.password.empty()) {
            return {};
        }
        std::string wire;
        if (uri_.user.empty()) {
            append_redis_command(wire, {"AUTH", uri_.password});
        } else {
            append_redis_command(wire, {"AUTH", uri_.user, uri_.password});
        }
        RL_TRY_VOID(send(wire));
        RL_TRY(reply, read_reply());
        if (reply->type == REDIS_REPLY_ERROR) {
            return fail(errc::invalid_argument, uri_.text + ": AUTH refused: " + std::string(reply->str, reply->len));
        }
        return {};
    }

    Result<void> send(std::string_view bytes) {
        while (!bytes.empty()) {
            const ssize_t n = ::send(context_->fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0) {
                const bool timed_out = errno == EAGAIN || errno == EWOULDBLOCK;
                return fail(errc::io_error, uri_.text + ": " + uri_.endpoint() +
                                                ": sending: " + (timed_out ? "timed out" : std::strerror(errno)));
            }
            bytes.remove_prefix(static_cast<std::size_t>(n));
        }
        return {};
    }

    // One reply, with the bounds redis_connection.cpp puts on short replies: hiredis's
    // redisGetReply would read until a reply is whole, however long the server's claim (a
    // 2^62-byte bulk string, an endless line) or however slowly it trickles (each byte re-arms
    // the socket timeout). So the reads are here: one deadline per reply, and at most
    // redis_short_reply_bytes_max bytes read for it.
    Result<RedisReply> read_reply() {
        const auto timeout = std::chrono::duration<double>(options_.timeout_seconds);
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        std::size_t bytes_read = 0;
        for (;;) {
            void* reply = nullptr;
            if (redisGetReplyFromReader(context_.get(), &reply) != REDIS_OK) {
                return failure("reading a reply: " + redis_reader_failure(*context_->reader));
            }
            if (reply != nullptr) {
                return RedisReply(static_cast<redisReply*>(reply));
            }
            if (bytes_read > redis_short_reply_bytes_max) {
                return failure("a reply longer than 8 MiB where a short one was expected");
            }
            if (std::chrono::steady_clock::now() > deadline) {
                return failure("waiting for a reply: timed out");
            }
            const std::size_t buffered = context_->reader->len;
            if (redisBufferRead(context_.get()) != REDIS_OK) {
                const bool timed_out = context_->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK);
                return failure(std::string("waiting for a reply: ") +
                               (timed_out ? "timed out" : std::string(context_->errstr)));
            }
            bytes_read += context_->reader->len - buffered;
        }
    }

    // Sends `wire` and reads `count` replies, each of which must not be an error.
    Result<std::vector<RedisReply>> request(const std::string& wire, std::size_t count, std::string_view what) {
        RL_TRY_VOID(send(wire));
        std::vector<RedisReply> replies;
        for (std::size_t i = 0; i < count; ++i) {
            RL_TRY(reply, read_reply());
            if (reply->type == REDIS_REPLY_ERROR) {
                return fail(errc::io_error,
                            uri_.text + ": " + std::string(what) + ": " + std::string(reply->str, reply->len));
            }
            replies.push_back(std::move(reply));
        }
        return replies;
    }

private:
    Error failure(const std::string& what) const {
        return fail(errc::io_error, uri_.text + ": " + uri_.endpoint() + ": " + what);
    }

    const RedisUri& uri_;
    const NetworkOptions& options_;
    std::unique_ptr<redisContext, ContextFree> context_;
};

std::string random_suffix() {
    std::random_device device;
    std::uniform_int_distribution<std::uint64_t> bits;
    std::uint64_t value = (static_cast<std::uint64_t>(device()) << 32) ^ device();
    value ^= bits(device);
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (int i = 0; i < 16; ++i) {
        out += digits[(value >> (i * 4)) & 0xf];
    }
    return out;
}

class Publisher {
public:
    Publisher(const std::string& path, const RedisUri& uri, const NetworkOptions& options)
        : path_(path), uri_(uri), options_(options), session_(uri, options) {}

    Result<std::string> run(std::span<const RedisPiece> pieces) {
        RL_TRY_VOID(check_pieces(pieces));
        const int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            return posix::errno_error(path_, "cannot open the file to publish", errno);
        }
        file_ = posix::FileDescriptor(fd);
        RL_TRY_VOID(session_.connect());
        started_ = std::chrono::steady_clock::now();
        temporary_prefix_ = uri_.prefix + ".ringload-tmp-" + random_suffix();
        auto published = upload_and_switch(pieces);
        if (!published) {
            clean_up();
            return published.error();
        }
        return "SET " + std::to_string(pieces.size()) + " keys on redis " + uri_.endpoint();
    }

private:
    Result<void> check_pieces(std::span<const RedisPiece> pieces) const {
        std::set<std::pair<std::string_view, std::uint64_t>> seen;
        for (const RedisPiece& piece : pieces) {
            if (!seen.emplace(piece.name, piece.offset_bytes).second) {
                return fail(errc::invalid_argument, uri_.text + ": two pieces would both be key '" +
                                                        redis_key(uri_.prefix, piece.name, piece.offset_bytes) + "'");
            }
        }
        return {};
    }

    Result<void> upload_and_switch(std::span<const RedisPiece> pieces) {
        std::size_t replies_pending = 0;
        std::uint64_t bytes_pending = 0;
        for (const RedisPiece& piece : pieces) {
            temporary_keys_.push_back(redis_key(temporary_prefix_, piece.name, piece.offset_bytes));
            RL_TRY_VOID(send_set(temporary_keys_.back(), piece));
            ++replies_pending;
            bytes_pending += piece.length_bytes;
            if (replies_pending >= replies_pending_max || bytes_pending >= bytes_pending_max) {
                RL_TRY_VOID(read_set_replies(replies_pending));
                replies_pending = 0;
                bytes_pending = 0;
            }
        }
        RL_TRY_VOID(read_set_replies(replies_pending));
        if (std::chrono::steady_clock::now() - started_ > temporary_key_lifetime / 2) {
            return fail(errc::io_error, uri_.text + ": the upload took over " +
                                            std::to_string((temporary_key_lifetime / 2).count()) +
                                            " hours: its first keys may be expiring; nothing was changed");
        }
        RL_TRY(old_keys, scan(redis_scan_pattern(uri_.prefix)));

        // One transaction: readers see the old keys or the new ones.
        std::string wire;
        std::size_t commands = 0;
        append_redis_command(wire, {"MULTI"});
        for (std::size_t first = 0; first < old_keys.size(); first += keys_per_command) {
            std::vector<std::string_view> args{"DEL"};
            for (std::size_t i = first; i < std::min(old_keys.size(), first + keys_per_command); ++i) {
                args.push_back(old_keys[i]);
            }
            append_redis_command(wire, args);
            ++commands;
        }
        for (std::size_t i = 0; i < pieces.size(); ++i) {
            const std::string key = redis_key(uri_.prefix, pieces[i].name, pieces[i].offset_bytes);
            append_redis_command(wire, {"RENAME", temporary_keys_[i], key});
            append_redis_command(wire, {"PERSIST", key});
            commands += 2;
        }
        append_redis_command(wire, {"EXEC"});
        RL_TRY(replies, session_.request(wire, commands + 2, "MULTI/EXEC"));
        const redisReply& exec = *replies.back();
        if (exec.type != REDIS_REPLY_ARRAY || exec.elements != commands) {
            return fail(errc::io_error, uri_.text + ": the MULTI/EXEC that puts the keys in place was aborted");
        }
        for (std::size_t i = 0; i < exec.elements; ++i) {
            if (exec.element[i]->type == REDIS_REPLY_ERROR) {
                return fail(errc::io_error, uri_.text + ": putting the keys in place (MULTI/EXEC): " +
                                                std::string(exec.element[i]->str, exec.element[i]->len));
            }
        }
        return {};
    }

    // SET key <file bytes> PX <lifetime>, the value streamed from the file in copy_bytes pieces.
    Result<void> send_set(const std::string& key, const RedisPiece& piece) {
        std::string head = "*5\r\n$3\r\nSET\r\n$" + std::to_string(key.size()) + "\r\n" + key + "\r\n$" +
                           std::to_string(piece.length_bytes) + "\r\n";
        RL_TRY_VOID(session_.send(head));
        if (buffer_.empty() && piece.length_bytes > 0) {
            buffer_.resize(copy_bytes);
        }
        std::uint64_t done = 0;
        while (done < piece.length_bytes) {
            const auto want =
                static_cast<std::size_t>(std::min<std::uint64_t>(buffer_.size(), piece.length_bytes - done));
            RL_TRY(got, posix::pread_some(file_.get(), buffer_.data(), want, piece.offset_bytes + done, path_));
            if (got == 0) {
                return fail(errc::truncated,
                            path_ + ": ends before byte " + std::to_string(piece.offset_bytes + piece.length_bytes));
            }
            RL_TRY_VOID(session_.send(std::string_view(reinterpret_cast<const char*>(buffer_.data()), got)));
            done += got;
        }
        const std::string lifetime =
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(temporary_key_lifetime).count());
        return session_.send("\r\n$2\r\nPX\r\n$" + std::to_string(lifetime.size()) + "\r\n" + lifetime + "\r\n");
    }

    Result<void> read_set_replies(std::size_t count) {
        for (std::size_t i = 0; i < count; ++i) {
            RL_TRY(reply, session_.read_reply());
            if (reply->type == REDIS_REPLY_ERROR) {
                return fail(errc::io_error, uri_.text + ": SET: " + std::string(reply->str, reply->len));
            }
        }
        return {};
    }

    Result<std::vector<std::string>> scan(const std::string& pattern) {
        std::vector<std::string> keys;
        std::string cursor = "0";
        do {
            std::string wire;
            append_redis_command(wire, {"SCAN", cursor, "MATCH", pattern, "COUNT", "1000"});
            RL_TRY(replies, session_.request(wire, 1, "SCAN"));
            const redisReply& reply = *replies.front();
            if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 2 ||
                reply.element[0]->type != REDIS_REPLY_STRING || reply.element[1]->type != REDIS_REPLY_ARRAY) {
                return fail(errc::io_error, uri_.text + ": SCAN: an unexpected reply");
            }
            cursor.assign(reply.element[0]->str, reply.element[0]->len);
            for (std::size_t i = 0; i < reply.element[1]->elements; ++i) {
                const redisReply& key = *reply.element[1]->element[i];
                keys.emplace_back(key.str, key.len);
            }
        } while (cursor != "0");
        std::sort(keys.begin(), keys.end());
        keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
        return keys;
    }

    // Deletes the temporary keys on a fresh connection (the old one may be what failed). Best
    // effort: a failure here leaves keys that no reader of the prefix sees.
    void clean_up() {
        if (temporary_keys_.empty()) {
            return;
        }
        Session session(uri_, options_);
        if (!session.connect()) {
            return;
        }
        for (std::size_t first = 0; first < temporary_keys_.size(); first += keys_per_command) {
            std::vector<std::string_view> args{"DEL"};
            for (std::size_t i = first; i < std::min(temporary_keys_.size(), first + keys_per_command); ++i) {
                args.push_back(temporary_keys_[i]);
            }
            std::string wire;
            append_redis_command(wire, args);
            if (!session.request(wire, 1, "DEL")) {
                return;
            }
        }
    }

    const std::string& path_;
    const RedisUri& uri_;
    const NetworkOptions& options_;
    Session session_;
    posix::FileDescriptor file_;
    std::string temporary_prefix_;
    std::chrono::steady_clock::time_point started_;
    std::vector<std::string> temporary_keys_;
    std::vector<std::byte> buffer_;
};

} // namespace

Result<std::string> publish_to_redis(const std::string& local_path, std::string_view uri,
                                     std::span<const RedisPiece> pieces, const NetworkOptions& options) {
    RL_TRY(parsed, parse_redis_uri(uri));
    if (options.timeout_seconds <= 0) {
        return fail(errc::invalid_argument, parsed.text + ": the timeout must be positive");
    }
    Publisher publisher(local_path, parsed, options);
    return publisher.run(pieces);
}

} // namespace ringload
