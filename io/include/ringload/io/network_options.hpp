// io/include/ringload/io/network_options.hpp
//
// How to reach a remote object (any registered source: http://, https://, s3://, redis://, ...): one set of settings
// that the C++ API (OpenOptions::network, WriteOptions::network), the CLI and the sources share. Plain standard types
// only, so that the public headers can include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace ringload {

enum class HttpVersion : std::uint8_t {
    automatic, // http://: HTTP/1.1; https://: what ALPN agrees on (h2 preferred)
    http1_1,
    http2, // on http://, h2c with prior knowledge
};

enum class S3Addressing : std::uint8_t {
    automatic,    // virtual-hosted on AWS, path-style on other endpoints
    path,         // https://endpoint/bucket/key
    virtual_host, // https://bucket.endpoint/key
};

// s3:// objects. Empty fields are looked up: credentials from AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, then ~/.aws/credentials and ~/.aws/config
// (AWS_PROFILE or `profile`), then ~/.s3cfg; the endpoint from AWS_ENDPOINT_URL_S3,
// AWS_ENDPOINT_URL, ~/.s3cfg host_base, else AWS; the region from AWS_REGION,
// AWS_DEFAULT_REGION, the profile, else us-east-1.
struct S3Options {
    std::string endpoint; // "https://s3.example.com" or "http://127.0.0.1:9000"
    std::string region;
    std::string profile;
    std::string access_key_id;
    std::string secret_access_key;
    std::string session_token;
    bool anonymous = false; // unsigned requests (public buckets), whatever credentials exist
    S3Addressing addressing = S3Addressing::automatic;
};

struct NetworkOptions {
    // Requests in flight: HTTP/1.1 connections, or HTTP/2 connections times streams_per_connection.
    std::size_t connections = 8;
    std::size_t streams_per_connection = 1; // HTTP/2 only
    double timeout_seconds = 30;            // connecting, and each wait for the server
    std::size_t attempts = 6;               // tries per request, exponential backoff with jitter between
    // https: CAs to trust besides the system's (a PEM file, or a directory of hashed certificates),
    // or no certificate checks at all.
    std::string ca_file;
    bool insecure = false;
    HttpVersion http_version = HttpVersion::automatic;
    std::size_t range_size_bytes = 0; // bytes per range request; 0: 8 MiB
    S3Options s3;
    // The settings of registered sources (SourceKind::options, source_registry.hpp) by name, as
    // text: {"gcs_endpoint", "http://127.0.0.1:4443"}. Each source parses its own when it opens.
    std::map<std::string, std::string, std::less<>> source_settings;

    // A node-local cache of remote objects (object_cache.hpp): the directory its entries live in
    // ("": none). A load keeps what it reads there, and the next load of the same version reads
    // it from the local disk. `cache_validate` false: a whole entry is used without asking the
    // server whether the object changed. `cache_max_bytes`: what the directory may hold (least
    // recently used entries evicted; 0: no limit).
    std::string cache_dir;
    bool cache_validate = true;
    std::uint64_t cache_max_bytes = 0;
    // Set by the cache, not by users: open learning the object's size and version alone, no
    // byte of it read (HTTP: a HEAD instead of the first range GET); a source without such a
    // way opens as usual.
    bool open_without_reading = false;
};

} // namespace ringload
