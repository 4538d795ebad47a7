// io/src/gcs_error.hpp
//
// What a refusal's JSON body says, for error messages: GCS's JSON API answers
// {"error": {"code": 404, "message": "No such object: models/a.bin", ...}}, and OAuth token
// endpoints {"error": "invalid_grant", "error_description": "Invalid JWT Signature."}.
//
//     gcs_error_summary(R"({"error":{"code":403,"message":"denied"}})")   // "denied"
//     gcs_error_summary(R"({"error":"invalid_grant"})")                  // "invalid_grant"
//
// Untrusted text: shortened and made printable (printable.hpp). "" when the body is not such JSON.
#pragma once

#include <string>
#include <string_view>

namespace ringload {

std::string gcs_error_summary(std::string_view body);

} // namespace ringload
