// formats/model_signing/trusted_root.cpp
#include "formats/model_signing/trusted_root.hpp"

#include "formats/model_signing/base64.hpp"
#include "ringload/engine/hashes.hpp"

#include <nlohmann/json.hpp>

namespace ringload::model_signing {
namespace {

using nlohmann::json;

Result<std::string> raw_bytes(const json& holder, const char* key, const std::string& where) {
    const auto found = holder.find(key);
    if (found == holder.end() || !found->is_object() || !found->contains("rawBytes") ||
        !(*found)["rawBytes"].is_string()) {
        return fail(errc::format_error, where + "." + key + ".rawBytes is missing or not text");
    }
    return base64_decode((*found)["rawBytes"].get<std::string>(), where + "." + key + ".rawBytes");
}

Result<std::vector<LogKey>> log_keys(const json& root, const char* key, const std::string& name) {
    std::vector<LogKey> keys;
    const auto logs = root.find(key);
    if (logs == root.end()) {
        return keys;
    }
    if (!logs->is_array()) {
        return fail(errc::format_error, name + ": " + key + " is not a list");
    }
    for (const json& log : *logs) {
        if (!log.is_object()) {
            return fail(errc::format_error, name + ": " + key + " holds a non-object");
        }
        RL_TRY(der, raw_bytes(log, "publicKey", name + ": " + key + "[]"));
        const Sha256Digest id = sha256(std::as_bytes(std::span(der.data(), der.size())));
        keys.push_back({std::string(reinterpret_cast<const char*>(id.data()), id.size()), std::move(der)});
    }
    return keys;
}

Result<std::vector<std::string>> authority_certificates(const json& root, const std::string& name) {
    std::vector<std::string> certificates;
    const auto authorities = root.find("certificateAuthorities");
    if (authorities == root.end() || !authorities->is_array()) {
        return fail(errc::format_error, name + ": certificateAuthorities is missing or not a list");
    }
    for (const json& authority : *authorities) {
        const json* chain =
            authority.is_object() && authority.contains("certChain") ? &authority["certChain"] : nullptr;
        if (chain == nullptr || !chain->is_object() || !chain->contains("certificates") ||
            !(*chain)["certificates"].is_array()) {
            return fail(errc::format_error, name + ": a certificateAuthorities entry has no certChain.certificates");
        }
        for (const json& certificate : (*chain)["certificates"]) {
            if (!certificate.is_object() || !certificate.contains("rawBytes") || !certificate["rawBytes"].is_string()) {
                return fail(errc::format_error, name + ": a certificate without rawBytes");
            }
            RL_TRY(der, base64_decode(certificate["rawBytes"].get<std::string>(), name + ": certificates[].rawBytes"));
            certificates.push_back(std::move(der));
        }
    }
    return certificates;
}

} // namespace

Result<TrustedRoot> parse_trusted_root(std::string_view text, const std::string& name) {
    const json document = json::parse(text, nullptr, false);
    if (document.is_discarded() || !document.is_object()) {
        return fail(errc::format_error, name + ": not a Sigstore trusted root (not a JSON object)");
    }
    // A ClientTrustConfig (model_signing's --trust_config) holds the root as "trustedRoot".
    const json& root =
        document.contains("trustedRoot") && document["trustedRoot"].is_object() ? document["trustedRoot"] : document;
    TrustedRoot trusted;
    RL_TRY(certificates, authority_certificates(root, name));
    RL_TRY(transparency, log_keys(root, "tlogs", name));
    RL_TRY(certificate_logs, log_keys(root, "ctlogs", name));
    if (certificates.empty() || transparency.empty()) {
        return fail(errc::format_error, name + ": a trusted root needs certificate authorities and transparency logs");
    }
    trusted.authority_certificates = std::move(certificates);
    trusted.transparency_logs = std::move(transparency);
    trusted.certificate_logs = std::move(certificate_logs);
    return trusted;
}

} // namespace ringload::model_signing
