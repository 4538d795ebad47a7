// bindings/cli/signature_flags.cpp
#include "signature_flags.hpp"

namespace ringload::cli {

void add_signature_flags(CLI::App& command, SignatureFlags& flags, bool required, bool trust) {
    auto* signature = command.add_option("--signature", flags.named.signature_file,
                                         "The model's signature file (a Sigstore bundle, as model_signing's)");
    if (required) {
        signature->required();
    }
    command.add_option("--ignore-paths", flags.named.ignore_paths, "Paths relative to the model to leave out (repeat)");
    command.add_flag("--no-ignore-git-paths", flags.no_git_ignores,
                     "Hash the root's .git, .gitattributes, .github and .gitignore too");
    if (!trust) {
        return;
    }
    auto* key = command.add_option("--public-key", flags.named.public_key_file, "The signer's PEM public key (ECDSA)");
    auto* chain = command.add_option("--certificate-chain", flags.named.certificate_chain_files,
                                     "PEM certificates to trust for a certificate signature (repeat)");
    auto* root = command.add_option("--trust-root", flags.named.trust_root_file,
                                    "A keyless signature: the Sigstore trusted root to check it against offline "
                                    "(trusted_root.json, or a ClientTrustConfig)");
    auto* identity = command.add_option("--identity", flags.named.identity,
                                        "A keyless signature: who must have signed (the certificate's email or URI)");
    auto* issuer = command.add_option("--identity-issuer", flags.named.identity_issuer,
                                      "A keyless signature: the OIDC issuer that vouched for --identity");
    key->excludes(chain);
    root->excludes(key)->excludes(chain);
    for (CLI::Option* option : {key, chain, root, identity, issuer}) {
        if (!required) {
            option->needs(signature);
        }
    }
    identity->needs(root);
    issuer->needs(root);
}

} // namespace ringload::cli
