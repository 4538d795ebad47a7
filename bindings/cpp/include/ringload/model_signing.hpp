// ringload/model_signing.hpp
//
// OpenSSF Model Signing: a model folder's signature (a Sigstore bundle whose signed in-toto
// statement lists the SHA-256 of every file, or of every shard of each file), checked and made.
//
//     SignatureCheck check;
//     check.signature_file = "model.sig";
//     check.public_key_file = "pub.pem";            // or certificate_chain_files = {"ca.pem"}
//     RL_TRY(verified, verify_model_signature("/models/llama", check));
//
// Verification: the bundle's signature over the statement with the key given (its hint must
// match when present), or with the leaf of its certificate chain once that chains to a
// certificate the user trusts, is valid now and is meant for signing; then every file of the
// folder (model_signing's rules: hidden files in, the root's .git, .gitattributes, .github,
// .gitignore, the signature file and the statement's and caller's ignore_paths out; symlinks
// refused) must be one the statement lists, every listed file must be there, and each file's
// (or shard's) SHA-256, read at the engine's speed on every core, must match. Any failure names
// the signature file and what is wrong: the key, the certificate, a missing, extra or changed
// file (and shard). Keyless Sigstore bundles (a Fulcio certificate and a transparency log entry)
// are refused as not supported yet.
//
// Signing writes what `model_signing verify key` accepts (files mode, SHA-256), whole or not at
// all (a temporary file renamed into place).
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ringload {

struct SignatureCheck {
    std::string signature_file;
    std::string public_key_file;                      // the key method: a PEM public key (ECDSA)
    std::vector<std::string> certificate_chain_files; // the certificate method: PEM certificates to trust
    std::vector<std::string> ignore_paths;            // relative to the folder, besides the defaults
    bool ignore_git_paths = true;                     // the root's .git, .gitattributes, .github, .gitignore
    std::size_t threads = 0;                          // hashing threads; 0: one per core
};

struct ModelSignatureSummary {
    std::size_t files = 0;     // files hashed
    std::size_t resources = 0; // files or shards the statement lists
    std::uint64_t bytes = 0;   // bytes hashed
    double seconds = 0;
    std::string signer; // "ECDSA P-256 key pub.pem", "certificate 'CN=...' trusted by ca.pem"
    bool sharded = false;
};

Result<ModelSignatureSummary> verify_model_signature(const std::string& folder, const SignatureCheck& check);

struct SignatureWrite {
    std::string private_key_file; // a PEM ECDSA private key (P-256, P-384 or P-521), not encrypted
    std::string signature_file;   // where the bundle goes
    std::vector<std::string> ignore_paths;
    bool ignore_git_paths = true;
    std::size_t threads = 0;
};

Result<ModelSignatureSummary> sign_model(const std::string& folder, const SignatureWrite& write);

} // namespace ringload
