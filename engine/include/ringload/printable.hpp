// engine/include/ringload/printable.hpp
//
// Text that came from outside (tensor names, metadata, pickle strings, HTTP reason phrases,
// S3 error messages, URLs) made inert before it is printed or put in an error message:
//
//     printable("\x1b]0;pwned\x07x")          -> "\x1b]0;pwned\x07x" spelled out as escapes
//     printable(name, 200)                     -> at most ~200 bytes, "...(4800 more bytes)"
//     redact_secrets("https://h/o?X-Amz-Signature=abc&x=1")
//                                              -> "https://h/o?X-Amz-Signature=REDACTED&x=1"
//
// printable keeps valid UTF-8 (names in any script stay readable) and escapes C0/C1 control
// characters, DEL, Unicode's bidirectional overrides and isolates (which reorder what a
// terminal shows) as \u{XXXX}, and bytes that are not UTF-8 as \xNN. Backslashes are kept as
// they are, so applying it twice changes nothing.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>

namespace ringload {

std::string printable(std::string_view text, std::size_t max_bytes = std::numeric_limits<std::size_t>::max());

// The values of signed or secret query parameters (AWS SigV4's X-Amz-Signature, -Credential and
// -Security-Token, GCS's X-Goog-Signature and -Credential, S3's v2 Signature, Azure SAS's sig,
// token, access_token, ...) replaced by REDACTED, wherever such a query appears in the text.
std::string redact_secrets(std::string_view text);

} // namespace ringload
