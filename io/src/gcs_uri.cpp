// io/src/gcs_uri.cpp
#include "gcs_uri.hpp"

#include "ringload/io/sigv4.hpp"
#include "ringload/io/url.hpp"

#include <algorithm>

namespace ringload {
namespace {

constexpr std::size_t bucket_bytes_min = 3;
constexpr std::size_t bucket_bytes_max = 222; // 63 per dot-separated part
constexpr std::size_t object_bytes_max = 1024;

bool is_lower_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

// GCS's bucket naming rules (lowercase letters, digits, '-', '_', '.'; starts and ends with a
// letter or digit), so that a typo fails here rather than as a puzzling 400 from the server.
bool is_bucket_name(std::string_view name) {
    if (name.size() < bucket_bytes_min || name.size() > bucket_bytes_max) {
        return false;
    }
    if (!is_lower_alnum(name.front()) || !is_lower_alnum(name.back())) {
        return false;
    }
    return std::all_of(name.begin(), name.end(),
                       [](char c) { return is_lower_alnum(c) || c == '-' || c == '_' || c == '.'; });
}

// RFC 3986's unreserved characters stay, everything else is %XX: '/' too, since the JSON API
// takes the object name as one path segment.
std::string encode(std::string_view text) {
    return sigv4_uri_encode(std::string(text), false);
}

} // namespace

Result<GcsLocation> parse_gcs_uri(std::string_view uri) {
    constexpr std::string_view scheme = "gs://";
    if (!uri.starts_with(scheme)) {
        return fail(errc::invalid_argument, std::string(uri) + ": not a gs://BUCKET/OBJECT URI");
    }
    const std::string_view rest = uri.substr(scheme.size());
    const std::size_t slash = rest.find('/');
    GcsLocation location{std::string(rest.substr(0, slash)), ""};
    if (!is_bucket_name(location.bucket)) {
        return fail(errc::invalid_argument,
                    std::string(uri) + ": '" + location.bucket +
                        "' is no GCS bucket name (3-222 lowercase letters, digits, '-', '_' or '.')");
    }
    if (slash == std::string_view::npos || slash + 1 == rest.size()) {
        return fail(errc::invalid_argument, std::string(uri) + ": names no object (gs://BUCKET/OBJECT)");
    }
    location.object = std::string(rest.substr(slash + 1));
    if (location.object.size() > object_bytes_max || location.object == "." || location.object == ".." ||
        location.object.find_first_of("\r\n") != std::string::npos) {
        return fail(errc::invalid_argument,
                    std::string(uri) + ": no GCS object name (1-1024 bytes, no CR or LF, not . or ..)");
    }
    return location;
}

Result<std::string> resolve_gcs_endpoint(std::string_view option, const EnvLookup& env) {
    std::string endpoint(option);
    std::string from = "the gcs_endpoint setting";
    if (endpoint.empty()) {
        const auto emulator = env("STORAGE_EMULATOR_HOST");
        if (!emulator || emulator->empty()) {
            return std::string(gcs_default_endpoint);
        }
        endpoint = *emulator;
        from = "STORAGE_EMULATOR_HOST";
        // google-cloud-storage and the Go client take a bare host:port for an emulator on http.
        if (endpoint.find("://") == std::string::npos) {
            endpoint = "http://" + endpoint;
        }
    }
    while (endpoint.ends_with('/')) {
        endpoint.pop_back();
    }
    auto url = parse_http_url(endpoint);
    if (!url || url->target != "/") {
        return fail(errc::invalid_argument,
                    "the GCS endpoint '" + endpoint + "' (" + from + ") is not an http(s)://HOST[:PORT] URL");
    }
    return endpoint;
}

std::string gcs_media_url(std::string_view endpoint, const GcsLocation& location) {
    return std::string(endpoint) + "/storage/v1/b/" + encode(location.bucket) + "/o/" + encode(location.object) +
           "?alt=media";
}

std::string gcs_resumable_upload_url(std::string_view endpoint, const GcsLocation& location) {
    return std::string(endpoint) + "/upload/storage/v1/b/" + encode(location.bucket) +
           "/o?uploadType=resumable&name=" + encode(location.object);
}

} // namespace ringload
