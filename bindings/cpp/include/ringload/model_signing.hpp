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
// are verified offline against trust_root_file (formats/model_signing/keyless.hpp says what is
// and is not checked without a network).
//
// Signing writes what `model_signing verify key` accepts (files mode, SHA-256), whole or not at
// all (a temporary file renamed into place).
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ringload {

struct SignatureCheck {
    std::string signature_file;
    std::string public_key_file;                      // the key method: a PEM public key (ECDSA)
    std::vector<std::string> certificate_chain_files; // the certificate method: PEM certificates to trust
    // Keyless (Sigstore) signatures, verified offline: the trusted root (trusted_root.json, or
    // a ClientTrustConfig as model_signing's --trust_config) and who must have signed: the
    // certificate's SAN (email or URI) and the OIDC issuer that vouched for it.
    std::string trust_root_file;
    std::string identity;
    std::string identity_issuer;
    std::vector<std::string> ignore_paths; // relative to the folder, besides the defaults
    bool ignore_git_paths = true;          // the root's .git, .gitattributes, .github, .gitignore
    std::size_t threads = 0;               // hashing threads; 0: one per core
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

// One file of a signed model, as its verified statement describes it: what a load of the file
// hashes from the bytes it reads (LoadOptions::signed_file). The load reads the whole file
// whatever it wants of it, hashes it in file order beside its own work, and fails, naming the
// file (and shard), before it returns or hands over a tensor when a digest differs.
struct SignedFile {
    std::string path;           // the file, for messages
    std::string signature_file; // for messages
    std::uint64_t size_bytes = 0;
    std::uint64_t shard_bytes = 0;    // 0: one digest of the whole file (files mode)
    std::vector<std::string> digests; // raw SHA-256: the file's, or each shard's in file order
};

// Hashes the whole of `file` (its shards on `threads` threads; 0: one per core) and compares
// it with the statement: what a load reports in place of a parse error, which a changed file
// may cause before its hash is complete.
Result<void> verify_signed_file(const SignedFile& file, std::size_t threads = 0);

// What a failed open or load of a signed file reports, one rule for every front end: a file
// changed since it was signed may fail its parse (its header, a record's) before its hash
// completes, so unless `failure` is the hash's own or a cancel, the whole file is hashed
// (verify_signed_file) and a difference is the failure reported, naming the file; else
// `failure` stands.
Error failure_of_signed_file(const SignedFile& file, Error failure, std::size_t threads = 0);

// A model whose signature checked out before any of its bytes were read: the bundle's
// signature with the signer's key or certificates, its statement, and (for a whole folder)
// the folder's file list against the statement's: an extra or missing file fails here. Then
// each file's loads verify what they read (file()), and verify_files() hashes the files no
// load read (configs, tokenizers).
//
//     RL_TRY(model, SignedModel::open("/models/llama", check, true));
//     load_options.signed_file = *model->file("/models/llama/model-00001-of-00002.safetensors");
//     ... load every weight file ...
//     RL_TRY(rest, model->verify_files(loaded_paths));
class SignedModel {
public:
    // `model`: a folder or one file. `whole_folder`: list the folder and require its files to
    // be the statement's; false for a load of some of its files (each still checked).
    static Result<std::shared_ptr<const SignedModel>> open(const std::string& model, const SignatureCheck& check,
                                                           bool whole_folder);
    // The model for a load of `file`: the file itself when the statement signs one file,
    // else `folder`, or, when that is empty, the file's own folder.
    static Result<std::shared_ptr<const SignedModel>> open_for_file(const std::string& file, const std::string& folder,
                                                                    const SignatureCheck& check);
    ~SignedModel();

    // What a load of `path` (a file of the model) must hash to; fails when the statement does
    // not list it or its size does not fit its shards.
    Result<std::shared_ptr<const SignedFile>> file(const std::string& path) const;
    // Hashes one file of the model (all its shards on every core): the error a load of it
    // reports in place of a parse error, which a changed file may cause before its hash does.
    Result<void> verify_file(const std::string& path) const;
    // Hashes every file of the folder listing but `except_paths` on every core; each must match.
    Result<ModelSignatureSummary> verify_files(const std::vector<std::string>& except_paths, std::size_t threads) const;
    // The folder's files, as paths to open, in the statement's order (opened whole; else none).
    std::vector<std::string> paths() const;
    const std::string& signer() const noexcept;
    bool sharded() const noexcept;

    struct State;

private:
    explicit SignedModel(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

struct SignatureWrite {
    std::string private_key_file; // a PEM ECDSA private key (P-256, P-384 or P-521), not encrypted
    std::string signature_file;   // where the bundle goes
    std::vector<std::string> ignore_paths;
    bool ignore_git_paths = true;
    std::size_t threads = 0;
};

Result<ModelSignatureSummary> sign_model(const std::string& folder, const SignatureWrite& write);

// Signs one file as a one-file model from its SHA-256 (32 raw bytes) computed elsewhere: a
// writer's, hashed while it wrote (WriteOptions::sign_key_file). The ignore and thread fields
// of `write` are not used.
Result<ModelSignatureSummary> sign_file_digest(const std::string& file, std::string_view sha256,
                                               std::uint64_t size_bytes, const SignatureWrite& write);

// Fails (naming the file) when `private_key_file` is not a PEM ECDSA private key ringload signs
// with: what a writer checks before it writes a byte.
Result<void> check_signing_key(const std::string& private_key_file);

} // namespace ringload
