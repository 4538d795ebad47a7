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

// A count the bundle writes as decimal text ("206344181").
Result<std::int64_t> count_at(const json& object, const char* key, const std::string& where) {
    RL_TRY(text, text_at(object, key, where));
    if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos) {
        return fail(errc::format_error, where + "." + key + " is not a count");
    }
    return std::stoll(text);
}

Result<std::string> decoded_at(const json& object, const char* key, const std::string& where) {
    RL_TRY(text, text_at(object, key, where));
    return base64_decode(text, where + "." + key);
}

Result<void> read_inclusion_proof(const json& proof, LogEntry& entry, const std::string& where) {
    RL_TRY(index, count_at(proof, "logIndex", where));
    RL_TRY(size, count_at(proof, "treeSize", where));
    RL_TRY(root, decoded_at(proof, "rootHash", where));
    RL_TRY(checkpoint, object_at(proof, "checkpoint", where));
    RL_TRY(note, text_at(*checkpoint, "envelope", where + ".checkpoint"));
    const auto hashes = proof.find("hashes");
    if (hashes == proof.end() || !hashes->is_array() || hashes->size() > 64) {
        return fail(errc::format_error, where + ".hashes is missing or not a list (of at most 64)");
    }
    for (const json& hash : *hashes) {
        if (!hash.is_string()) {
            return fail(errc::format_error, where + ".hashes holds a non-text");
        }
        RL_TRY(raw, base64_decode(hash.get<std::string>(), where + ".hashes[]"));
        entry.proof_hashes.push_back(std::move(raw));
    }
    entry.proof_index = index;
    entry.tree_size = size;
    entry.root_hash = std::move(root);
    entry.checkpoint = std::move(note);
    return {};
}

Result<LogEntry> read_log_entry(const json& object, const std::string& where) {
    if (!object.is_object()) {
        return fail(errc::format_error, where + " is not an object");
    }
    LogEntry entry;
    RL_TRY(index, count_at(object, "logIndex", where));
    RL_TRY(time, count_at(object, "integratedTime", where));
    RL_TRY(log_id, object_at(object, "logId", where));
    RL_TRY(key_id, decoded_at(*log_id, "keyId", where + ".logId"));
    RL_TRY(kind_version, object_at(object, "kindVersion", where));
    RL_TRY(kind, text_at(*kind_version, "kind", where + ".kindVersion"));
    RL_TRY(version, text_at(*kind_version, "version", where + ".kindVersion"));
    RL_TRY(body_text, text_at(object, "canonicalizedBody", where));
    RL_TRY(body, base64_decode(body_text, where + ".canonicalizedBody"));
    entry.log_index = index;
    entry.integrated_time = time;
    entry.log_id = std::move(key_id);
    entry.kind = std::move(kind);
    entry.version = std::move(version);
    entry.body_base64 = std::move(body_text);
    entry.body = std::move(body);
    if (object.contains("inclusionPromise")) {
        RL_TRY(promise, object_at(object, "inclusionPromise", where));
        RL_TRY(set, decoded_at(*promise, "signedEntryTimestamp", where + ".inclusionPromise"));
        entry.signed_entry_timestamp = std::move(set);
    }
    RL_TRY(proof, object_at(object, "inclusionProof", where));
    RL_TRY_VOID(read_inclusion_proof(*proof, entry, where + ".inclusionProof"));
    return entry;
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
    const auto entries = material.find("tlogEntries");
    if (entries == material.end() || !entries->is_array() || entries->size() > 16) {
        return fail(errc::format_error, where + ".tlogEntries is missing or not a list (of at most 16)");
    }
    for (const json& entry : *entries) {
        RL_TRY(read, read_log_entry(entry, where + ".tlogEntries[]"));
        bundle.log_entries.push_back(std::move(read));
    }
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
