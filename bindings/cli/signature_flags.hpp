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

// The flags fill a SignatureCheck's own fields (CLI11 writes straight into them).
struct SignatureFlags {
    SignatureCheck named;        // signature_file, whom to trust, ignore_paths
    bool no_git_ignores = false; // --no-ignore-git-paths: SignatureCheck::ignore_git_paths false

    bool given() const noexcept { return !named.signature_file.empty(); }
    SignatureCheck check(std::size_t threads) const {
        SignatureCheck made = named;
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
