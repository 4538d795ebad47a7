// formats/model_signing/bundle.hpp
//
// A model signature file: the Sigstore bundle (v0.3 JSON) that OpenSSF Model Signing writes,
// holding a DSSE envelope (the signed in-toto statement, its signature) and what verifies it
// (a public key's hint, a certificate chain, or a keyless signer's certificate and log entry).
//
//     RL_TRY(bundle, parse_bundle(text, "model.sig"));
//     // bundle.payload: the statement's bytes; bundle.signature: DER ECDSA over dsse_pae(...)
//
// Hostile files are refused with a message naming the file and the field: not JSON, a field
// missing or of the wrong type, bad base64, more than one signature, over 16 MiB.
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringload::model_signing {

inline constexpr std::string_view bundle_media_type = "application/vnd.dev.sigstore.bundle.v0.3+json";
inline constexpr std::string_view in_toto_payload_type = "application/vnd.in-toto+json";
inline constexpr std::size_t bundle_bytes_max = 16 << 20;

enum class SignerKind {
    public_key,        // verificationMaterial.publicKey: checked with a key the user gives
    certificate_chain, // verificationMaterial.x509CertificateChain: leaf first
    keyless,           // verificationMaterial.certificate + a transparency log entry (Sigstore)
};

// A keyless bundle's transparency log entry (verificationMaterial.tlogEntries[], Rekor v1):
// what the log signed (the inclusion promise), where the entry is in the log's tree (the
// inclusion proof and the checkpoint that signs its root), and the entry's body.
struct LogEntry {
    std::int64_t log_index = 0; // in the whole log (the promise signs this one)
    std::string log_id;         // raw: SHA-256 of the log's DER public key
    std::string kind;           // "dsse"
    std::string version;        // "0.0.1"
    std::int64_t integrated_time = 0;
    std::string body_base64;            // canonicalizedBody as stored: the promise signs this text
    std::string body;                   // decoded: the JSON the log stored
    std::string signed_entry_timestamp; // DER ECDSA over the promise; empty: none
    std::int64_t proof_index = 0;       // in the log shard's tree (the inclusion proof's)
    std::int64_t tree_size = 0;
    std::string root_hash;                 // raw
    std::vector<std::string> proof_hashes; // raw, leaf to root
    std::string checkpoint;                // the signed note of the tree's root
};

struct SignatureBundle {
    std::string payload; // the in-toto statement's bytes, as signed
    std::string payload_type;
    std::string signature; // DER ECDSA-Sig-Value
    SignerKind signer = SignerKind::public_key;
    std::string public_key_hint;           // public_key: hex SHA-256 of the key's PEM text ("" if absent)
    std::vector<std::string> certificates; // certificate_chain: DER, leaf first; keyless: the leaf
    std::vector<LogEntry> log_entries;     // keyless: the transparency log's entries
};

Result<SignatureBundle> parse_bundle(std::string_view json, const std::string& name);

// The key method's bundle, as model_signing writes it (compact JSON; keyid "").
std::string write_key_bundle(const SignatureBundle& bundle);

} // namespace ringload::model_signing
