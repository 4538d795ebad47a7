// formats/model_signing/trusted_root.hpp
//
// A Sigstore trusted root (trusted_root.json, or a ClientTrustConfig that holds one as
// "trustedRoot"): the certificate authorities that issue keyless signers' certificates
// (Fulcio), the transparency logs that record signatures (Rekor) and the certificate
// transparency logs that record certificates, each log by its DER public key. What a keyless
// signature is verified against offline; the file is the user's to keep current (ringload
// fetches nothing).
#pragma once

#include "ringload/error.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace ringload::model_signing {

struct LogKey {
    std::string key_id; // raw SHA-256 of the DER key: how entries and SCTs name their log
    std::string der;    // SubjectPublicKeyInfo
};

struct TrustedRoot {
    std::vector<std::string> authority_certificates; // DER, every CA's chain, all trusted
    std::vector<LogKey> transparency_logs;
    std::vector<LogKey> certificate_logs;
};

// `name` (the file) starts every message.
Result<TrustedRoot> parse_trusted_root(std::string_view text, const std::string& name);

} // namespace ringload::model_signing
