// bindings/cpp/src/uri.hpp
//
// Which source a URI names: local files and http:// for reading so far; the other schemes are
// recognised so that they fail with a clear message rather than as "file not found".
#pragma once

#include "ringload/error.hpp"

#include <string>
#include <string_view>

namespace ringload {

inline bool is_http_uri(std::string_view uri) {
    return uri.starts_with("http://") || uri.starts_with("https://");
}

// The path of a local file URI; other schemes fail with a message naming them.
inline Result<std::string> local_path_of(std::string_view uri) {
    if (uri.starts_with("file://")) {
        return std::string(uri.substr(7));
    }
    for (std::string_view scheme : {"http://", "https://", "s3://", "redis://"}) {
        if (uri.starts_with(scheme)) {
            return fail(errc::unsupported, std::string(uri) + ": " + std::string(scheme.substr(0, scheme.size() - 3)) +
                                               " sources are not available in this version (local files only)");
        }
    }
    if (uri.empty()) {
        return fail(errc::invalid_argument, "empty path");
    }
    return std::string(uri);
}

} // namespace ringload
