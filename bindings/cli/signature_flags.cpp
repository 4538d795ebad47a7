// bindings/cli/signature_flags.cpp
#include "signature_flags.hpp"

namespace ringload::cli {

void add_signature_flags(CLI::App& command, SignatureFlags& flags, bool required, bool trust) {
    auto* signature = command.add_option("--signature", flags.signature,
                                         "The model's signature file (a Sigstore bundle, as model_signing's)");
    if (required) {
        signature->required();
    }
    command.add_option("--ignore-paths", flags.ignore_paths, "Paths relative to the model to leave out (repeat)");
    command.add_flag("--no-ignore-git-paths", flags.no_git_ignores,
                     "Hash the root's .git, .gitattributes, .github and .gitignore too");
    if (!trust) {
        return;
    }
    auto* key = command.add_option("--public-key", flags.public_key, "The signer's PEM public key (ECDSA)");
    auto* chain = command.add_option("--certificate-chain", flags.certificate_chain,
                                     "PEM certificates to trust for a certificate signature (repeat)");
    key->excludes(chain);
    if (!required) {
        key->needs(signature);
        chain->needs(signature);
    }
}

} // namespace ringload::cli
