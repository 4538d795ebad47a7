// options/signature_rows.cpp: a signed model's words (OpenSSF Model Signing,
// ringload/model_signing.hpp): the signature, whom to trust, what the folder leaves out.
#include "options/option_rows.hpp"

namespace ringload::options {
namespace {

OptionRow signature_row(std::string_view name, OptionKind kind, std::string_view help,
                        std::uint8_t fronts = front_all) {
    OptionRow row{name, kind, {}, help};
    row.target = OptionTarget::signature;
    row.fronts = fronts;
    return row;
}

FieldAccess signature_text(std::string SignatureCheck::*field) {
    return {[field](const LoadSettings& s) { return s.signature.*field; },
            [field](LoadSettings& s, std::string_view text) { s.signature.*field = std::string(text); },
            {}};
}

// A list row: each value given adds one.
FieldAccess signature_list(std::vector<std::string> SignatureCheck::*field) {
    return {[field](const LoadSettings& s) {
                std::string joined;
                for (const std::string& each : s.signature.*field) {
                    joined += (joined.empty() ? "" : ",") + each;
                }
                return joined;
            },
            [field](LoadSettings& s, std::string_view text) { (s.signature.*field).emplace_back(text); },
            {}};
}

} // namespace

void add_signature_rows(std::vector<SharedRow>& rows) {
    rows.push_back({signature_row("signature", OptionKind::text,
                                  "the model's OpenSSF Model Signing signature (a Sigstore bundle): every weight file "
                                  "is verified in its single read, the folder's other files after"),
                    signature_text(&SignatureCheck::signature_file)});
    rows.push_back({signature_row("public_key", OptionKind::text, "signature: the signer's PEM public key (ECDSA)"),
                    signature_text(&SignatureCheck::public_key_file)});
    rows.push_back({signature_row("certificate_chain", OptionKind::list,
                                  "signature: PEM certificates to trust for a certificate signature"),
                    signature_list(&SignatureCheck::certificate_chain_files)});
    rows.push_back({signature_row("trust_root", OptionKind::text,
                                  "a keyless signature: the Sigstore trusted root to check it against offline "
                                  "(trusted_root.json, or a ClientTrustConfig)"),
                    signature_text(&SignatureCheck::trust_root_file)});
    rows.push_back({signature_row("identity", OptionKind::text,
                                  "a keyless signature: who must have signed (the certificate's email or URI)"),
                    signature_text(&SignatureCheck::identity)});
    rows.push_back({signature_row("identity_issuer", OptionKind::text,
                                  "a keyless signature: the OIDC issuer that vouched for identity"),
                    signature_text(&SignatureCheck::identity_issuer)});
    rows.push_back(
        {signature_row("ignore_paths", OptionKind::list, "signature: paths relative to the model to leave out"),
         signature_list(&SignatureCheck::ignore_paths)});
    rows.push_back({signature_row("ignore_git_paths", OptionKind::flag,
                                  "signature: leave out the root's .git, .gitattributes, .github and .gitignore"),
                    {[](const LoadSettings& s) { return flag_text(s.signature.ignore_git_paths); },
                     [](LoadSettings& s, std::string_view t) { s.signature.ignore_git_paths = t == "true"; },
                     {}}});
    // The CLI loads a folder (or one file) it is given: the folder is the URI there.
    rows.push_back({signature_row("model_folder", OptionKind::text,
                                  "signature: the signed model's folder (default: the weight files' own)",
                                  front_python | front_server),
                    {[](const LoadSettings& s) { return s.model_folder; },
                     [](LoadSettings& s, std::string_view t) { s.model_folder = std::string(t); },
                     {}}});
}

} // namespace ringload::options
