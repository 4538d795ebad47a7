// tests/fuzz/model_signature_fuzz.cpp: a model signature file from hostile bytes (issue #40):
// the Sigstore bundle's JSON, its base64 fields and certificates, the in-toto statement inside
// (its resources, hex digests, serialization), and a certificate chain check on whatever DER
// the bundle carries (against no anchor: it must fail cleanly, never crash).
#include "formats/model_signing/bundle.hpp"
#include "formats/model_signing/statement.hpp"
#include "formats/model_signing/trust.hpp"
#include "fuzz_input.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ringload::model_signing;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    if (auto bundle = parse_bundle(text, "fuzz.sig")) {
        (void)parse_statement(bundle->payload, "fuzz.sig");
        if (!bundle->certificates.empty()) {
            (void)verify_certificate_chain(bundle->certificates, {std::string(text)}, "fuzz.sig");
        }
    }
    (void)parse_statement(text, "fuzz.sig"); // the input as the statement itself
    return 0;
}
