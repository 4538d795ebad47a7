// tests/fuzz/model_signature_fuzz.cpp: a model signature file from hostile bytes (issue #40):
// the Sigstore bundle's JSON, its base64 fields and certificates, the in-toto statement inside
// (its resources, hex digests, serialization), and a certificate chain check on whatever DER
// the bundle carries (against no anchor: it must fail cleanly, never crash); a keyless bundle
// through every offline check against Sigstore's real trusted root (tests/data), and the input
// as a trusted root itself.
#include "formats/model_signing/bundle.hpp"
#include "formats/model_signing/keyless.hpp"
#include "formats/model_signing/statement.hpp"
#include "formats/model_signing/trust.hpp"
#include "fuzz_input.hpp"

#include <fstream>
#include <sstream>

namespace {

// tests/data/model_signing/keyless/trusted_root.json, found from this file's path.
const ringload::model_signing::TrustedRoot& real_trusted_root() {
    static const ringload::model_signing::TrustedRoot root = [] {
        const std::string here = __FILE__;
        std::ifstream file(here.substr(0, here.rfind('/')) + "/../data/model_signing/keyless/trusted_root.json");
        std::stringstream text;
        text << file.rdbuf();
        auto parsed = ringload::model_signing::parse_trusted_root(text.str(), "trusted_root.json");
        return parsed ? std::move(*parsed) : ringload::model_signing::TrustedRoot{};
    }();
    return root;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ringload::model_signing;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto bundle = parse_bundle(text, "fuzz.sig")) {
        (void)parse_statement(bundle->payload, "fuzz.sig");
        if (!bundle->certificates.empty()) {
            (void)verify_certificate_chain(bundle->certificates, {std::string(text)}, "fuzz.sig");
        }
        if (bundle->signer == SignerKind::keyless) {
            std::string signer;
            (void)verify_keyless(*bundle, real_trusted_root(), {"someone@example.com", "https://issuer"}, "fuzz.sig",
                                 signer);
        }
    }
    (void)parse_statement(text, "fuzz.sig"); // the input as the statement itself
    (void)parse_trusted_root(text, "fuzz.json");
    return 0;
}
