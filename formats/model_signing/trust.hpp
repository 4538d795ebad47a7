// formats/model_signing/trust.hpp
//
// The keys that sign and verify model signatures: ECDSA on P-256, P-384 or P-521, the message
// hashed with SHA-256, SHA-384 or SHA-512 by curve, signatures DER-encoded (as Model Signing's
// key and certificate methods). A certificate chain is checked here too: the leaf must chain to
// one of the certificates the user trusts (the bundle's others are untrusted intermediates),
// be valid now, and be meant for signing (key usage digitalSignature or extended key usage
// codeSigning).
//
//     RL_TRY(key, EcKey::public_from_pem(pem_text, "pub.pem"));
//     RL_TRY_VOID(key.verify(dsse_pae(payload), bundle.signature, "model.sig"));
//
// OpenSSL stays inside trust.cpp.
#pragma once

#include "ringload/error.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct evp_pkey_st; // OpenSSL's EVP_PKEY

namespace ringload::model_signing {

class EcKey {
public:
    static Result<EcKey> public_from_pem(std::string_view pem, const std::string& name);
    // A DER SubjectPublicKeyInfo (a transparency or CT log's key in a Sigstore trusted root).
    static Result<EcKey> public_from_der(std::string_view der, const std::string& name);
    // The key of a DER X.509 certificate (not checked here: verify_certificate_chain, keyless).
    static Result<EcKey> from_certificate(const std::string& der, const std::string& name);
    static Result<EcKey> private_from_pem(std::string_view pem, const std::string& name);

    // "P-256", "P-384" or "P-521".
    const std::string& curve() const { return curve_; }
    // The SubjectPublicKeyInfo as PEM text, as OpenSSL and Python's cryptography write it (the
    // key method's hint is the SHA-256 of these bytes).
    std::string public_pem() const;
    // Fails (errc::signature_invalid) when `der_signature` is not this key's over `message`;
    // `name` (the signature file) starts the message.
    Result<void> verify(std::string_view message, std::string_view der_signature, const std::string& name) const;
    Result<std::string> sign(std::string_view message) const;

private:
    friend Result<EcKey> verify_certificate_chain(const std::vector<std::string>&, const std::vector<std::string>&,
                                                  const std::string&);
    // EVP_PKEY_free, out of line: OpenSSL's headers stay out of this one.
    struct KeyFree {
        void operator()(evp_pkey_st* key) const noexcept;
    };
    using OwnedKey = std::unique_ptr<evp_pkey_st, KeyFree>;
    static Result<EcKey> adopt(OwnedKey key, const std::string& name);
    EcKey(OwnedKey key, std::string curve) : key_(std::move(key)), curve_(std::move(curve)) {}
    OwnedKey key_;
    std::string curve_;
};

// The leaf's key once `bundle_certificates` (DER, leaf first) chain to one of `trusted_pems`
// (PEM texts, each one or more certificates) at the current time and the leaf may sign; else an
// error naming `name` and what failed (untrusted, expired, not for signing).
Result<EcKey> verify_certificate_chain(const std::vector<std::string>& bundle_certificates,
                                       const std::vector<std::string>& trusted_pems, const std::string& name);

// Hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);

} // namespace ringload::model_signing
