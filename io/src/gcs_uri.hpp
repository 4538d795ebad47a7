// io/src/gcs_uri.hpp
//
// Where a gs://BUCKET/OBJECT is: the bucket and object of the URI, the endpoint that serves it
// (the gcs_endpoint setting, else STORAGE_EMULATOR_HOST as Google's client libraries read it,
// else https://storage.googleapis.com) and the JSON API's URLs for it, with the object name
// percent-encoded once ('/' included, as the API wants it in a path segment).
//
//     RL_TRY(location, parse_gcs_uri("gs://models/llama/model.safetensors"));
//     RL_TRY(endpoint, resolve_gcs_endpoint("", process_environment()));
//     gcs_media_url(endpoint, location);
//     // "https://storage.googleapis.com/storage/v1/b/models/o/llama%2Fmodel.safetensors?alt=media"
#pragma once

#include "ringload/error.hpp"
#include "ringload/io/s3_config.hpp" // EnvLookup

#include <string>
#include <string_view>

namespace ringload {

inline constexpr std::string_view gcs_default_endpoint = "https://storage.googleapis.com";

struct GcsLocation {
    std::string bucket;
    std::string object; // as given after the bucket, unencoded ("dir/model.safetensors")
};

// "gs://bucket/object" -> {bucket, object}. The bucket must be a valid GCS bucket name; the
// object any name GCS takes (1 to 1024 bytes, no CR or LF, not "." or ".."). Nothing is decoded:
// a '%' or '?' is part of the name, as gsutil and gcloud read such URIs.
Result<GcsLocation> parse_gcs_uri(std::string_view uri);

// "scheme://host[:port]" without a trailing slash: `option` (the gcs_endpoint setting; it names
// its scheme), else STORAGE_EMULATOR_HOST ("http://host:port" or "host:port", which means
// http:// as in Google's libraries), else gcs_default_endpoint.
Result<std::string> resolve_gcs_endpoint(std::string_view option, const EnvLookup& env);

// The object's bytes: GET {endpoint}/storage/v1/b/{bucket}/o/{object}?alt=media
std::string gcs_media_url(std::string_view endpoint, const GcsLocation& location);

// Where a resumable upload of the object begins: POST
// {endpoint}/upload/storage/v1/b/{bucket}/o?uploadType=resumable&name={object}
std::string gcs_resumable_upload_url(std::string_view endpoint, const GcsLocation& location);

} // namespace ringload
