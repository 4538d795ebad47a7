// bindings/cpp/src/uri.hpp
//
// The local file a URI names. Remote URIs (http://, https://, s3://, redis://) are told apart
// first with is_remote_uri (io/remote_source.hpp) and never come here.
#pragma once

#include "ringload/error.hpp"

#include <string>
#include <string_view>

namespace ringload {

// The path of a local file URI: a plain path or file://PATH.
inline Result<std::string> local_path_of(std::string_view uri) {
    if (uri.starts_with("file://")) {
        return std::string(uri.substr(7));
    }
    if (uri.empty()) {
        return fail(errc::invalid_argument, "empty path");
    }
    return std::string(uri);
}

} // namespace ringload
