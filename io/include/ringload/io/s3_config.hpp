// io/include/ringload/io/s3_config.hpp
//
// Where an s3:// object is and how to sign for it: the bucket and key of the URI, then the
// credentials, endpoint, region and addressing from S3Options, the environment and the files
// AWS's and s3cmd's tools keep (tensorizer's users have ~/.s3cfg).
//
//     RL_TRY(location, parse_s3_uri("s3://models/gpt2/model.tensors"));
//     RL_TRY(config, resolve_s3_config(options.s3, process_environment()));
//     std::string url = s3_object_url(config, location); // "https://s3.us-east-1.amazonaws.com/..."
//
// Lookup order, each step only for what the ones before left open:
//   credentials  S3Options (access_key_id + secret_access_key, session_token), then
//                AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, then the profile
//                (S3Options::profile, AWS_PROFILE, else "default") in AWS_SHARED_CREDENTIALS_FILE
//                (~/.aws/credentials) and AWS_CONFIG_FILE (~/.aws/config, `[profile NAME]`), then
//                ~/.s3cfg `[default]` access_key / secret_key / access_token; else anonymous.
//   endpoint     S3Options, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, ~/.s3cfg host_base (https
//                unless use_https = False), else https://s3.REGION.amazonaws.com.
//   region       S3Options, AWS_REGION, AWS_DEFAULT_REGION, the profile's region, else us-east-1.
//   addressing   virtual-hosted (bucket.host) on amazonaws.com for DNS-safe bucket names,
//                path-style (host/bucket) elsewhere, unless S3Options says.
// A profile named explicitly (S3Options::profile or AWS_PROFILE) that no file has is an error.
// Error messages name files and keys' sources, never a secret.
#pragma once

#include "ringload/error.hpp"
#include "ringload/io/network_options.hpp"
#include "ringload/io/sigv4.hpp"

#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace ringload {

struct S3Location {
    std::string bucket;
    std::string key; // unencoded, as given after the bucket ("dir/model.tensors")
};

// "s3://bucket/key" -> {bucket, key}. The key may hold any characters but must not be empty.
Result<S3Location> parse_s3_uri(std::string_view uri);

struct S3Config {
    bool anonymous = false; // no credentials: requests go unsigned
    SigV4Credentials credentials;
    std::string credentials_from; // "S3 options", "environment", "profile dev in /home/u/.aws/config", ...
    std::string endpoint;         // "scheme://host[:port]", no trailing slash
    std::string region;
    bool path_style = true;
};

// Environment variables by name; nullopt when unset. Tests pass a map instead of the process's.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
EnvLookup process_environment();

// Resolves the lookup order above. `bucket` decides virtual-hosted addressing on AWS (a bucket
// name with dots or capitals cannot be a host name label there).
Result<S3Config> resolve_s3_config(const S3Options& options, const EnvLookup& env, std::string_view bucket = "");

// The object's http(s) URL with the key percent-encoded once, as SigV4 signs it.
std::string s3_object_url(const S3Config& config, const S3Location& location);

// "a%2Fb%20c" -> "a/b c"; malformed escapes are kept as they are.
std::string percent_decode(std::string_view text);

} // namespace ringload
