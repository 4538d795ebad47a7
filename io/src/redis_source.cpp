// io/src/redis_source.cpp
#include "ringload/io/redis_source.hpp"

#include "connect.hpp"
#include "connection_pool.hpp"
#include "network_source.hpp"
#include "redis_connection.hpp"
#include "retry_policy.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/io/redis_layout.hpp"

#include <algorithm>
#include <set>

namespace ringload {
namespace {

using tcp = asio::ip::tcp;

constexpr std::size_t scan_count = 1000;      // SCAN's COUNT hint: keys per round trip
constexpr std::size_t strlen_batch = 1024;    // STRLENs pipelined per request
constexpr std::size_t ranges_per_read = 4096; // GETRANGEs in one read; the rest is a short read

class RedisSource final : public NetworkSource {
public:
    RedisSource(asio::io_context& loop, RedisUri uri, const NetworkOptions& options)
        : uri_(std::move(uri)),
          options_(options),
          timeout_(static_cast<long long>(options.timeout_seconds * 1000)),
          connections_(loop.get_executor(), options.connections) {}

    const std::string& name() const override { return uri_.text; }
    std::uint64_t size_bytes() const override { return size_bytes_; }
    std::size_t preferred_read_bytes() const override {
        return options_.range_size_bytes != 0 ? options_.range_size_bytes : std::size_t{8} << 20;
    }
    std::string describe() const override {
        return "Redis GETRANGE on " + uri_.endpoint() + ", " + std::to_string(keys_.size()) + " keys, " +
               std::to_string(options_.connections) + " connections";
    }

    // Resolves the host, lists the keys under the prefix and learns their lengths.
    Task<Result<void>> open() {
        auto resolving = resolve_endpoints(uri_.host, uri_.port);
        auto resolved = co_await std::move(resolving);
        if (!resolved) {
            co_return fail(errc::io_error,
                           uri_.text + ": cannot resolve " + uri_.host + ": " + resolved.error().detail);
        }
        endpoints_ = std::move(*resolved);

        auto listing = list_keys();
        RL_CO_TRY(names, co_await std::move(listing));
        if (names.empty()) {
            co_return fail(errc::not_found, uri_.text + ": no keys under the prefix '" + uri_.prefix +
                                                "' (SCAN MATCH " + redis_scan_pattern(uri_.prefix) + " found none)");
        }
        std::vector<RedisKeyRange> keys;
        keys.reserve(names.size());
        for (std::string& key : names) {
            auto offset = redis_key_offset(key);
            if (!offset) {
                co_return fail(errc::format_error,
                               uri_.text + ": key '" + key + "' under the prefix does not end in ':<byte offset>'");
            }
            keys.push_back({std::move(key), *offset, 0});
        }
        for (std::size_t first = 0; first < keys.size(); first += strlen_batch) {
            const std::size_t count = std::min(strlen_batch, keys.size() - first);
            std::string wire;
            for (std::size_t i = first; i < first + count; ++i) {
                append_redis_command(wire, {"STRLEN", keys[i].key});
            }
            auto asking = command(std::move(wire), count);
            RL_CO_TRY(replies, co_await std::move(asking));
            for (std::size_t i = 0; i < count; ++i) {
                const redisReply& reply = *replies[i];
                if (reply.type != REDIS_REPLY_INTEGER || reply.integer < 0) {
                    co_return fail(errc::format_error,
                                   uri_.text + ": STRLEN of key '" + keys[first + i].key + "': " +
                                       (reply.type == REDIS_REPLY_ERROR ? std::string(reply.str, reply.len)
                                                                        : std::string("not an integer reply")));
                }
                keys[first + i].length_bytes = static_cast<std::uint64_t>(reply.integer);
            }
        }
        RL_CO_TRY(tiled, tile_redis_keys(keys, uri_.prefix, uri_.text));
        size_bytes_ = tiled;
        // Empty keys hold no bytes: reads never need them.
        std::erase_if(keys, [](const RedisKeyRange& k) { return k.length_bytes == 0; });
        keys_ = std::move(keys);
        // The head serves the index's small reads, and with the keys' lengths names the version.
        std::vector<std::byte> head(std::min<std::uint64_t>(head_bytes, size_bytes_));
        auto reading = read_exactly_at(*this, 0, head);
        RL_CO_TRY_VOID(co_await std::move(reading));
        keep_head(head);
        version_ = version_of(keys_, head);
        co_return Result<void>();
    }

    // Redis keeps no version of a value: the digest of the keys' names, offsets and lengths and of
    // the file's head (its header and index) stands in, which any rewrite of the file changes.
    std::string version() const override { return version_; }

private:
    std::string version_of(const std::vector<RedisKeyRange>& keys, std::span<const std::byte> head) const {
        Sha256 digest;
        for (const RedisKeyRange& key : keys) {
            const std::string line =
                key.key + " " + std::to_string(key.offset_bytes) + " " + std::to_string(key.length_bytes) + "\n";
            digest.update(std::as_bytes(std::span(line)));
        }
        digest.update(head);
        const Sha256Digest sum = digest.finish();
        return std::to_string(size_bytes_) + " bytes in " + std::to_string(keys.size()) + " keys, digest " +
               to_hex(std::span(sum).first(16));
    }

    // Every key under the prefix, each once (SCAN may repeat keys).
    Task<Result<std::vector<std::string>>> list_keys() {
        const std::string pattern = redis_scan_pattern(uri_.prefix);
        const std::string count = std::to_string(scan_count);
        std::vector<std::string> names;
        std::string cursor = "0";
        do {
            std::string wire;
            append_redis_command(wire, {"SCAN", cursor, "MATCH", pattern, "COUNT", count});
            auto asking = command(std::move(wire), 1);
            RL_CO_TRY(replies, co_await std::move(asking));
            const redisReply& reply = *replies.front();
            if (reply.type == REDIS_REPLY_ERROR) {
                co_return fail(errc::io_error, uri_.text + ": SCAN: " + std::string(reply.str, reply.len));
            }
            if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 2 ||
                reply.element[0]->type != REDIS_REPLY_STRING || reply.element[1]->type != REDIS_REPLY_ARRAY) {
                co_return fail(errc::io_error, uri_.text + ": SCAN: an unexpected reply");
            }
            cursor.assign(reply.element[0]->str, reply.element[0]->len);
            const redisReply& batch = *reply.element[1];
            for (std::size_t i = 0; i < batch.elements; ++i) {
                if (batch.element[i]->type == REDIS_REPLY_STRING) {
                    names.emplace_back(batch.element[i]->str, batch.element[i]->len);
                }
            }
        } while (cursor != "0");
        std::sort(names.begin(), names.end());
        names.erase(std::unique(names.begin(), names.end()), names.end());
        co_return names;
    }

    // Up to dst.size() bytes at offset_bytes: one GETRANGE per key the range touches, all in
    // one request. Past ranges_per_read keys the read comes back short.
    Task<Result<std::size_t>> read_range(std::uint64_t offset_bytes, std::span<std::byte> dst) override {
        if (dst.empty() || offset_bytes >= size_bytes_) {
            co_return std::size_t{0};
        }
        const std::uint64_t end = offset_bytes + std::min<std::uint64_t>(dst.size(), size_bytes_ - offset_bytes);
        // The last key that starts at or before offset_bytes; the keys tile the file, so it holds it.
        auto key =
            std::upper_bound(keys_.begin(), keys_.end(), offset_bytes,
                             [](std::uint64_t offset, const RedisKeyRange& k) { return offset < k.offset_bytes; });
        --key;
        std::string wire;
        std::vector<RedisRangeTarget> targets;
        std::uint64_t position = offset_bytes;
        while (position < end && targets.size() < ranges_per_read) {
            const std::uint64_t first = position - key->offset_bytes;
            const std::uint64_t last = std::min(end, key->offset_bytes + key->length_bytes) - key->offset_bytes;
            // Up to the key's end, one byte more is asked for: a key that grew answers longer.
            const std::uint64_t asked_last = last == key->length_bytes ? last : last - 1;
            append_redis_command(wire, {"GETRANGE", key->key, std::to_string(first), std::to_string(asked_last)});
            targets.push_back(
                {dst.subspan(static_cast<std::size_t>(position - offset_bytes), static_cast<std::size_t>(last - first)),
                 key->key});
            position += last - first;
            ++key;
        }
        auto reading = ranges(std::move(wire), targets);
        RL_CO_TRY_VOID(co_await std::move(reading));
        co_return static_cast<std::size_t>(position - offset_bytes);
    }

    Task<Result<std::vector<RedisReply>>> command(std::string wire, std::size_t reply_count) {
        auto sending = round_trip(std::move(wire), reply_count, {});
        co_return co_await std::move(sending);
    }
    Task<Result<void>> ranges(std::string wire, std::span<const RedisRangeTarget> targets) {
        auto sending = round_trip(std::move(wire), 0, targets);
        RL_CO_TRY_VOID(co_await std::move(sending));
        co_return Result<void>();
    }

    // One request on a connection from the pool, sent again on a fresh connection after a
    // connection failure (up to options_.attempts tries). With targets, the replies are
    // GETRANGEs read into them; otherwise reply_count small replies are returned.
    Task<Result<std::vector<RedisReply>>> round_trip(std::string wire, std::size_t reply_count,
                                                     std::span<const RedisRangeTarget> targets) {
        const auto abandoned = abandonment_.watch_from_now();
        for (std::size_t attempt = 1;; ++attempt) {
            auto acquiring = acquire();
            std::unique_ptr<RedisConnection> connection = co_await std::move(acquiring);
            if (abandoned()) { // its run stopped while it waited for a connection
                release(std::move(connection), true);
                co_return abandoned_read(uri_.text);
            }
            busy_.insert(connection.get()); // abandon_reads closes it
            Result<std::vector<RedisReply>> result = std::vector<RedisReply>{};
            if (!connection->connected()) {
                auto connecting = connection->connect(endpoints_, uri_);
                auto connected = co_await std::move(connecting);
                if (!connected) {
                    result = connected.error();
                }
            }
            if (result && targets.empty()) {
                auto exchanging = connection->exchange(wire, reply_count);
                result = co_await std::move(exchanging);
            } else if (result) {
                auto reading = connection->read_ranges(wire, targets);
                auto read = co_await std::move(reading);
                if (!read) {
                    result = read.error();
                }
            }
            const bool retryable = !result && connection->retryable();
            busy_.erase(connection.get());
            release(std::move(connection), static_cast<bool>(result));
            if (result || !retryable) {
                co_return result;
            }
            if (abandoned()) {
                co_return abandoned_read(uri_.text);
            }
            if (attempt >= std::max<std::size_t>(options_.attempts, 1)) {
                Error error = result.error();
                error.detail += " (gave up after " + std::to_string(attempt) + " attempts)";
                co_return error;
            }
            auto pause = pause_before_retry(backoff_, attempt, std::chrono::milliseconds(0), abandoned);
            co_await std::move(pause);
        }
    }

    // The requests in flight end now (their connections closed: they fail and are not
    // retried); those of a later run start afresh.
    void abandon_reads() override {
        abandonment_.abandon();
        for (RedisConnection* connection : busy_) {
            connection->close();
        }
    }

    Task<std::unique_ptr<RedisConnection>> acquire() {
        auto acquiring = connections_.acquire([this](asio::any_io_executor loop) {
            return std::make_unique<RedisConnection>(std::move(loop), uri_.text, timeout_);
        });
        co_return co_await std::move(acquiring);
    }

    void release(std::unique_ptr<RedisConnection> connection, bool reusable) {
        const bool keep = reusable && connection->connected();
        connections_.release(std::move(connection), keep);
    }

    RedisUri uri_;
    NetworkOptions options_;
    std::chrono::milliseconds timeout_;
    tcp::resolver::results_type endpoints_;
    std::vector<RedisKeyRange> keys_; // non-empty keys, by offset: they tile [0, size_bytes_)
    std::uint64_t size_bytes_ = 0;
    std::string version_;
    ConnectionPool<RedisConnection> connections_;
    Backoff backoff_;                 // 100 ms doubling up to 5 s, with jitter
    std::set<RedisConnection*> busy_; // with a request in flight
    Abandonment abandonment_;
};

} // namespace

Task<Result<std::unique_ptr<Source>>> open_redis_source(asio::io_context& loop, std::string uri,
                                                        const NetworkOptions& options) {
    auto parsed = parse_redis_uri(uri);
    if (!parsed) {
        // parse_redis_uri's messages already start with the redacted URI, or have none.
        Error error = parsed.error();
        if (!error.detail.starts_with("redis://")) {
            error.detail = "redis://...: " + error.detail;
        }
        co_return error;
    }
    if (options.timeout_seconds <= 0) {
        co_return fail(errc::invalid_argument, parsed->text + ": the timeout must be positive");
    }
    if (options.range_size_bytes % 4096 != 0) {
        co_return fail(errc::invalid_argument, parsed->text +
                                                   ": the range size must be a multiple of 4096 bytes, not " +
                                                   std::to_string(options.range_size_bytes));
    }
    auto source = std::make_unique<RedisSource>(loop, std::move(*parsed), options);
    auto handing_out = open_and_hand_out(std::move(source));
    co_return co_await std::move(handing_out);
}

} // namespace ringload
