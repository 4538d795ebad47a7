// io/src/source_registry.cpp
#include "ringload/io/source_registry.hpp"

#include "ringload/io/azure_source.hpp"
#include "ringload/io/gcs_source.hpp"
#include "ringload/io/http_source.hpp"
#include "ringload/io/redis_source.hpp"
#include "ringload/io/s3_source.hpp"

#include <array>
#include <chrono>

namespace ringload {
namespace {

// One line per source, in the order they are asked: a source that takes some https:// URLs
// (an object store's own host names) comes before the plain HTTP source, which takes them all.
constexpr std::array sources{
    &s3_source, &redis_source, &azure_source, &gcs_source, &http_source,
};

} // namespace

std::span<const SourceKind* const> registered_sources() noexcept {
    return sources;
}

const SourceKind* source_for(std::string_view uri) noexcept {
    for (const SourceKind* kind : sources) {
        if (kind->handles(uri)) {
            return kind;
        }
    }
    return nullptr;
}

std::string source_forms_text() {
    std::string text;
    for (const SourceKind* kind : sources) {
        text += (text.empty() ? "" : ", ") + std::string(kind->uri_forms);
    }
    return text;
}

Result<std::string> local_path_of(std::string_view uri) {
    if (uri.starts_with("file://")) {
        return std::string(uri.substr(7));
    }
    if (uri.empty()) {
        return fail(errc::invalid_argument, "empty path");
    }
    if (const auto scheme_end = uri.find("://");
        scheme_end != std::string_view::npos && scheme_end > 0 && uri.find('/') == scheme_end + 1) {
        return fail(errc::unsupported, std::string(uri) + ": no source reads " +
                                           std::string(uri.substr(0, scheme_end)) +
                                           ":// URIs; ringload reads local paths, file://PATH, " + source_forms_text());
    }
    return std::string(uri);
}

std::string_view source_setting(const NetworkOptions& network, std::string_view name) {
    const auto found = network.source_settings.find(name);
    return found == network.source_settings.end() ? std::string_view() : std::string_view(found->second);
}

bool source_flag(const NetworkOptions& network, std::string_view name) {
    const std::string_view value = source_setting(network, name);
    return value == "true" || value == "1" || value == "yes";
}

HttpSourceOptions http_source_options(const NetworkOptions& network) {
    HttpSourceOptions http;
    http.connections = network.connections;
    http.timeout = std::chrono::milliseconds(static_cast<long long>(network.timeout_seconds * 1000));
    http.attempts = network.attempts;
    http.ca_file = network.ca_file;
    http.insecure = network.insecure;
    http.open_without_reading = network.open_without_reading;
    if (network.range_size_bytes != 0) {
        http.range_size_bytes = network.range_size_bytes;
    }
    return http;
}

} // namespace ringload
