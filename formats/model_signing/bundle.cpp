// formats/model_signing/bundle.cpp
#include "formats/model_signing/bundle.hpp"

#include "formats/model_signing/base64.hpp"

#include <nlohmann/json.hpp>

namespace ringload::model_signing {
namespace {

using nlohmann::json;

// The member `key` of `object` as text, or an error naming the file and the field's path.
Result<std::string> text_at(const json& object, const char* key, const std::string& where) {
    const auto found = object.find(key);
    if (found == object.end() || !found->is_string()) {
        return fail(errc::format_error, where + "." + key + " is missing or not text");
    }
    return found->get<std::string>();
}

Result<const json*> object_at(const json& object, const char* key, const std::string& where) {
    const auto found = object.find(key);
    if (found == object.end() || !found->is_object()) {
        return fail(errc::format_error, where + "." + key + " is missing or not an object");
    }
    return &*found;
}

Result<std::vector<std::string>> certificates_of(const json& chain, const std::string& where) {
    const auto list = chain.find("certificates");
    if (list == chain.end() || !list->is_array() || list->empty() || list->size() > 16) {
        return fail(errc::format_error, where + ".certificates must list 1 to 16 certificates");
    }
    std::vector<std::string> certificates;
    for (const json& entry : *list) {
        if (!entry.is_object()) {
            return fail(errc::format_error, where + ".certificates holds a non-object");
        }
        RL_TRY(text, text_at(entry, "rawBytes", where + ".certificates[]"));
        RL_TRY(der, base64_decode(text, where + ".certificates[].rawBytes"));
        certificates.push_back(std::move(der));
    }
    return certificates;
}

// verificationMaterial: exactly one of publicKey, x509CertificateChain, certificate.
Result<void> read_material(const json& material, SignatureBundle& bundle, const std::string& where) {
    const int kinds = static_cast<int>(material.contains("publicKey")) +
                      static_cast<int>(material.contains("x509CertificateChain")) +
                      static_cast<int>(material.contains("certificate"));
    if (kinds != 1) {
        return fail(errc::format_error,
                    where + " must hold exactly one of publicKey, x509CertificateChain and certificate");
    }
    if (material.contains("publicKey")) {
        RL_TRY(key, object_at(material, "publicKey", where));
        bundle.signer = SignerKind::public_key;
        const auto hint = key->find("hint");
        bundle.public_key_hint = hint != key->end() && hint->is_string() ? hint->get<std::string>() : "";
        return {};
    }
    if (material.contains("x509CertificateChain")) {
        RL_TRY(chain, object_at(material, "x509CertificateChain", where));
        bundle.signer = SignerKind::certificate_chain;
        RL_TRY(certificates, certificates_of(*chain, where + ".x509CertificateChain"));
        bundle.certificates = std::move(certificates);
        return {};
    }
    RL_TRY(leaf, object_at(material, "certificate", where));
    RL_TRY(text, text_at(*leaf, "rawBytes", where + ".certificate"));
    RL_TRY(der, base64_decode(text, where + ".certificate.rawBytes"));
    bundle.signer = SignerKind::keyless;
    bundle.certificates = {std::move(der)};
    return {};
}

Result<void> read_envelope(const json& envelope, SignatureBundle& bundle, const std::string& where) {
    RL_TRY(payload, text_at(envelope, "payload", where));
    RL_TRY(decoded, base64_decode(payload, where + ".payload"));
    bundle.payload = std::move(decoded);
    RL_TRY(type, text_at(envelope, "payloadType", where));
    bundle.payload_type = std::move(type);
    const auto signatures = envelope.find("signatures");
    if (signatures == envelope.end() || !signatures->is_array() || signatures->size() != 1 ||
        !(*signatures)[0].is_object()) {
        return fail(errc::format_error, where + ".signatures must hold exactly one signature");
    }
    RL_TRY(sig, text_at((*signatures)[0], "sig", where + ".signatures[0]"));
    RL_TRY(der, base64_decode(sig, where + ".signatures[0].sig"));
    bundle.signature = std::move(der);
    return {};
}

} // namespace

Result<SignatureBundle> parse_bundle(std::string_view text, const std::string& name) {
    if (text.size() > bundle_bytes_max) {
        return fail(errc::format_error,
                    name + ": " + std::to_string(text.size()) + " bytes, more than a signature file holds (16 MiB)");
    }
    const json document = json::parse(text, nullptr, false);
    if (document.is_discarded() || !document.is_object()) {
        return fail(errc::format_error, name + ": not a signature bundle (not a JSON object)");
    }
    RL_TRY(media_type, text_at(document, "mediaType", name));
    if (media_type != bundle_media_type) {
        return fail(errc::format_error,
                    name + ": mediaType '" + media_type.substr(0, 100) + "' is not " + std::string(bundle_media_type));
    }
    SignatureBundle bundle;
    RL_TRY(material, object_at(document, "verificationMaterial", name));
    RL_TRY_VOID(read_material(*material, bundle, name + ".verificationMaterial"));
    RL_TRY(envelope, object_at(document, "dsseEnvelope", name));
    RL_TRY_VOID(read_envelope(*envelope, bundle, name + ".dsseEnvelope"));
    return bundle;
}

std::string write_key_bundle(const SignatureBundle& bundle) {
    json document = {
        {"mediaType", bundle_media_type},
        {"verificationMaterial", {{"publicKey", {{"hint", bundle.public_key_hint}}}, {"tlogEntries", json::array()}}},
        {"dsseEnvelope",
         {{"payload", base64_encode(bundle.payload)},
          {"payloadType", in_toto_payload_type},
          {"signatures", json::array({{{"sig", base64_encode(bundle.signature)}, {"keyid", ""}}})}}}};
    return document.dump();
}

} // namespace ringload::model_signing
