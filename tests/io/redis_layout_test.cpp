// tests/io/redis_layout_test.cpp
//
// The pure parts of redis:// (no server): URIs as tensorizer reads them (the password redacted
// in every message), SCAN patterns with glob characters escaped, key offsets, and the check
// that keys tile a file (gaps, overlaps, empty keys of meta tensors, the header key).
// tests/bindings/redis_test.py covers the rest against a real redis-server.
#include "ringload/io/redis_layout.hpp"

#include <gtest/gtest.h>

#include <limits>

namespace ringload {
namespace {

TEST(RedisUri, DefaultsAndPrefix) {
    auto uri = parse_redis_uri("redis://cache.local/models/gpt2");
    ASSERT_TRUE(uri) << uri.error().detail;
    EXPECT_EQ(uri->host, "cache.local");
    EXPECT_EQ(uri->port, "6379");
    EXPECT_EQ(uri->prefix, "models/gpt2"); // the path without its leading slash, as tensorizer
    EXPECT_EQ(uri->password, "");
    EXPECT_EQ(uri->text, "redis://cache.local/models/gpt2");
    EXPECT_EQ(uri->endpoint(), "cache.local:6379");
}

TEST(RedisUri, PasswordIsDecodedAndNeverShown) {
    auto uri = parse_redis_uri("redis://alice:s3cret%20pw@127.0.0.1:7000/m");
    ASSERT_TRUE(uri) << uri.error().detail;
    EXPECT_EQ(uri->user, "alice");
    EXPECT_EQ(uri->password, "s3cret pw");
    EXPECT_EQ(uri->text, "redis://alice:***@127.0.0.1:7000/m");
    auto no_user = parse_redis_uri("redis://:pw@[::1]:7000/m");
    ASSERT_TRUE(no_user) << no_user.error().detail;
    EXPECT_EQ(no_user->host, "::1");
    EXPECT_EQ(no_user->endpoint(), "[::1]:7000");
    EXPECT_EQ(no_user->text, "redis://:***@[::1]:7000/m");
    auto bad = parse_redis_uri("redis://:hunter2@host:port/m");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().detail.find("hunter2"), std::string::npos) << bad.error().detail;
}

TEST(RedisUri, Refusals) {
    EXPECT_FALSE(parse_redis_uri("http://host/x"));
    EXPECT_NE(parse_redis_uri("redis://host:6379/").error().detail.find("no key prefix"), std::string::npos);
    EXPECT_NE(parse_redis_uri("redis://host:6379").error().detail.find("no key prefix"), std::string::npos);
    EXPECT_NE(parse_redis_uri("redis:///x").error().detail.find("no host"), std::string::npos);
    EXPECT_FALSE(parse_redis_uri("redis://host/x?db=1"));
    EXPECT_FALSE(parse_redis_uri("redis://host:99999999999999999999/x"));
    EXPECT_FALSE(parse_redis_uri("redis://host:0/x"));
}

TEST(RedisLayout, KeysPatternsAndOffsets) {
    EXPECT_EQ(redis_key("m", "wte.weight", 262217), "m:wte.weight:262217");
    EXPECT_EQ(redis_scan_pattern("a*b?[c]\\d"), "a\\*b\\?\\[c\\]\\\\d:*");
    EXPECT_EQ(redis_key_offset("m:a:b:42"), 42u);
    EXPECT_EQ(redis_key_offset("m:header:0"), 0u);
    EXPECT_FALSE(redis_key_offset("m:name:"));
    EXPECT_FALSE(redis_key_offset("m:name:4x"));
    EXPECT_FALSE(redis_key_offset("nocolon"));
}

std::vector<RedisKeyRange> tensor_keys() {
    // The header, then "a" (a meta tensor: its data key is empty and starts where "b" does).
    return {{"m:b:110", 110, 30}, {"m:a:100", 100, 0}, {"m:header:0", 0, 90}, {"m:a:90", 90, 10}, {"m:b:100", 100, 10}};
}

TEST(RedisLayout, TilesWithEmptyKeysAnywhere) {
    auto keys = tensor_keys();
    auto size = tile_redis_keys(keys, "m", "redis://h/m");
    ASSERT_TRUE(size) << size.error().detail;
    EXPECT_EQ(*size, 140u);
    EXPECT_EQ(keys.front().key, "m:header:0");
    EXPECT_EQ(keys[2].key, "m:a:100"); // the empty key before the non-empty one at 100
}

TEST(RedisLayout, GapOverlapAndMissingHeaderAreNamed) {
    auto gap = tensor_keys();
    gap.erase(gap.begin() + 3); // m:a:90
    auto error = tile_redis_keys(gap, "m", "redis://h/m");
    ASSERT_FALSE(error);
    EXPECT_NE(error.error().detail.find("redis://h/m: no key holds bytes 90-99"), std::string::npos)
        << error.error().detail;

    auto overlap = tensor_keys();
    overlap.push_back({"m:c:95", 95, 20});
    error = tile_redis_keys(overlap, "m", "redis://h/m");
    ASSERT_FALSE(error);
    EXPECT_NE(error.error().detail.find("overlaps"), std::string::npos) << error.error().detail;

    auto headless = tensor_keys();
    headless.erase(headless.begin() + 2);
    error = tile_redis_keys(headless, "m", "redis://h/m");
    ASSERT_FALSE(error);
    EXPECT_NE(error.error().detail.find("m:header:0"), std::string::npos) << error.error().detail;

    // Lengths are the server's STRLEN replies: a hostile sum must not wrap to a small size.
    std::vector<RedisKeyRange> wrapping = {{"m:header:0", 0, 90},
                                           {"m:a:90", 90, std::numeric_limits<std::uint64_t>::max() - 50}};
    error = tile_redis_keys(wrapping, "m", "redis://h/m");
    ASSERT_FALSE(error) << "tiled to " << *error << " bytes";
    EXPECT_NE(error.error().detail.find("ends past 2^64 bytes"), std::string::npos) << error.error().detail;

    std::vector<RedisKeyRange> none;
    error = tile_redis_keys(none, "m", "redis://h/m");
    ASSERT_FALSE(error);
    EXPECT_EQ(error.error().code, errc::not_found);
}

} // namespace
} // namespace ringload
