// io/include/ringload/io/redis_layout.hpp
//
// tensorizer's redis:// layout (its to_redis and RedisStreamFile, format notes §17): a file is
// cut into string keys under one prefix, each named after the byte offset where it starts:
//
//     file:  [ header + index ][ hdr a ][ data a ][ hdr b ][ data b ] ...
//     keys:   p:header:0        p:a:O1   p:a:O2    p:b:O3   p:b:O4
//
// A reader SCANs "p:*", sorts the keys by the integer after their last ':' and reads them as
// one contiguous file (the 8-byte end sentinel is not stored). Tensors without data (meta,
// zero-element) still get an empty data key. This file holds the pure parts: the URI, key
// names, and the check that a set of keys tiles a file.
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringload {

// redis://[user:password@]host[:port]/prefix, as tensorizer reads it: the prefix is the path
// without its leading '/', taken as is (no percent-decoding); port 6379 by default; db 0.
struct RedisUri {
    std::string host; // without IPv6 brackets
    std::string port;
    std::string user;     // percent-decoded; empty: the default user
    std::string password; // percent-decoded; empty: no AUTH
    std::string prefix;
    std::string text; // the URI with the password replaced by "***": for every message

    std::string endpoint() const; // "host:port" ("[::1]:6379")
};

Result<RedisUri> parse_redis_uri(std::string_view uri);

// "<prefix>:<name>:<offset>", the key tensorizer gives the bytes at `offset`.
std::string redis_key(std::string_view prefix, std::string_view name, std::uint64_t offset_bytes);

// The SCAN MATCH pattern for every key under `prefix`: "<prefix>:*", with glob characters in
// the prefix escaped so that they match only themselves.
std::string redis_scan_pattern(std::string_view prefix);

// The integer after the key's last ':', if it is one.
std::optional<std::uint64_t> redis_key_offset(std::string_view key);

struct RedisKeyRange {
    std::string key;
    std::uint64_t offset_bytes = 0;
    std::uint64_t length_bytes = 0;
};

// Sorts `keys` by offset and checks that the non-empty ones cover [0, size) with no gap and
// no overlap (empty keys may sit at any offset up to the end) and that "<prefix>:header:0"
// is among them. Returns the size; errors name `name` and the offset where tiling fails.
Result<std::uint64_t> tile_redis_keys(std::vector<RedisKeyRange>& keys, std::string_view prefix,
                                      const std::string& name);

} // namespace ringload
