// io/include/ringload/io/s3_error.hpp
//
// S3 (and S3-compatible servers) explain a failed request in a small XML body:
//     <Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message>...</Error>
// s3_error_summary turns it into "NoSuchKey: The specified key does not exist." for error
// messages (never the rest of the document, which may echo the request).
#pragma once

#include <string>
#include <string_view>

namespace ringload {

// "Code: Message", or "" when `body` is not an S3 error document.
std::string s3_error_summary(std::string_view body);

} // namespace ringload
