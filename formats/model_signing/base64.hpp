// formats/model_signing/base64.hpp
//
// Standard base64 (RFC 4648, with padding) as Sigstore bundles write their bytes.
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringload::model_signing {

std::string base64_encode(std::string_view bytes);
// Fails on characters outside the alphabet or a length that is not a multiple of 4 once
// whitespace is dropped; `what` names the field in the message.
Result<std::string> base64_decode(std::string_view text, std::string_view what);

// The engine's to_hex over a byte string (digests are kept as std::string here).
std::string to_hex(std::string_view bytes);
// Lowercase or uppercase hex; fails naming `what` on an odd length or a non-hex character.
Result<std::string> from_hex(std::string_view text, std::string_view what);

} // namespace ringload::model_signing
