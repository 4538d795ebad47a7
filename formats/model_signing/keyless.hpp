// formats/model_signing/keyless.hpp
//
// A keyless Sigstore signature (what `model_signing sign sigstore` writes), verified offline
// against a trusted root the user gives: the signer's short-lived certificate, its
// transparency log entry, and who signed.
//
//   leaf certificate ── chains (at the log's time) to a CA of the trusted root, may sign,
//                       carries a certificate-transparency SCT signed by a CT log of the root
//   log entry ───────── promised (SET) and included (Merkle proof to a checkpoint) by a
//                       transparency log of the root; its body names this envelope's payload
//                       hash, signature and certificate
//   identity ────────── the certificate's SAN (email or URI) and OIDC issuer are the ones given
//
// What offline cannot check: revocation, whether the trusted root is current (that is the
// file's keeper's job: sigstore's TUF repository), timestamps from a timestamp authority
// (the log's integrated time, which its promise signs, is the signing time used).
#pragma once

#include "formats/model_signing/bundle.hpp"
#include "formats/model_signing/trust.hpp"
#include "formats/model_signing/trusted_root.hpp"

#include <string>

namespace ringload::model_signing {

struct KeylessIdentity {
    std::string identity; // the certificate's SAN: an email address or a URI (a CI workflow)
    std::string issuer;   // the OIDC issuer that vouched for it ("https://github.com/login/oauth")
};

// The leaf's key, once everything above holds; `signer` says who and when. Errors name `name`
// (the signature file) and what failed (errc::signature_invalid).
Result<EcKey> verify_keyless(const SignatureBundle& bundle, const TrustedRoot& root, const KeylessIdentity& who,
                             const std::string& name, std::string& signer);

} // namespace ringload::model_signing
