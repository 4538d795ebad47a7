// bindings/cli/signature_flags.hpp
//
// The words that name a model's signature and whom to trust, shared by `verify`, `sign` and
// `load`: --signature F (--public-key F | --certificate-chain F... | --trust-root F --identity I
// --identity-issuer U) [--ignore-paths P]... [--no-ignore-git-paths].
#pragma once

#include "ringload/model_signing.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ringload::cli {

struct SignatureFlags {
    std::string signature;
    std::string public_key;
    std::vector<std::string> certificate_chain;
    std::string trust_root;
    std::string identity;
    std::string identity_issuer;
    std::vector<std::string> ignore_paths;
    bool no_git_ignores = false;

    SignatureCheck check(std::size_t threads) const {
        SignatureCheck made;
        made.signature_file = signature;
        made.public_key_file = public_key;
        made.certificate_chain_files = certificate_chain;
        made.trust_root_file = trust_root;
        made.identity = identity;
        made.identity_issuer = identity_issuer;
        made.ignore_paths = ignore_paths;
        made.ignore_git_paths = !no_git_ignores;
        made.threads = threads;
        return made;
    }
};

// --signature (required or not), --ignore-paths, --no-ignore-git-paths; with `trust`, whom
// to trust too (not for `sign`): --public-key, --certificate-chain, or a keyless signature's
// --trust-root, --identity and --identity-issuer.
void add_signature_flags(CLI::App& command, SignatureFlags& flags, bool required, bool trust);

} // namespace ringload::cli
