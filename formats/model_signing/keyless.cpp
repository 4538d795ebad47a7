// formats/model_signing/keyless.cpp
#include "formats/model_signing/keyless.hpp"

#include "formats/model_signing/base64.hpp"
#include "formats/model_signing/openssl_handles.hpp"
#include "ringload/engine/hashes.hpp"

#include <openssl/ct.h>
#include <openssl/pem.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <ctime>

namespace ringload::model_signing {
namespace {

using nlohmann::json;

std::string raw_sha256(std::string_view bytes) {
    const Sha256Digest digest = sha256(std::as_bytes(std::span(bytes.data(), bytes.size())));
    return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

Error invalid(const std::string& name, const std::string& what) {
    return Error{errc::signature_invalid, name + ": keyless signature: " + what};
}

const LogKey* log_named(const std::vector<LogKey>& logs, std::string_view key_id) {
    for (const LogKey& log : logs) {
        if (log.key_id == key_id) {
            return &log;
        }
    }
    return nullptr;
}

// The log's promise to include the entry: its signature over the entry's canonical JSON.
Result<void> check_promise(const LogEntry& entry, const EcKey& log, const std::string& name) {
    if (entry.signed_entry_timestamp.empty()) {
        return invalid(name, "the log entry has no inclusion promise (its time is not signed)");
    }
    const std::string promised = "{\"body\":\"" + entry.body_base64 +
                                 "\",\"integratedTime\":" + std::to_string(entry.integrated_time) + ",\"logID\":\"" +
                                 to_hex(entry.log_id) + "\",\"logIndex\":" + std::to_string(entry.log_index) + "}";
    if (!log.verify(promised, entry.signed_entry_timestamp, name)) {
        return invalid(name, "the log's inclusion promise does not verify with its key");
    }
    return {};
}

std::string node_hash(std::string_view left, std::string_view right) {
    return raw_sha256(std::string("\x01", 1) + std::string(left) + std::string(right));
}

// RFC 9162's inclusion proof: the entry's leaf hash up to the tree's root.
Result<void> check_inclusion(const LogEntry& entry, const std::string& name) {
    const auto index = static_cast<std::uint64_t>(entry.proof_index);
    const auto size = static_cast<std::uint64_t>(entry.tree_size);
    if (size == 0 || index >= size) {
        return invalid(name, "the inclusion proof's index is outside its tree");
    }
    const int inner = std::bit_width(index ^ (size - 1));
    const int border = std::popcount(index >> inner);
    if (entry.proof_hashes.size() != static_cast<std::size_t>(inner + border)) {
        return invalid(name, "the inclusion proof has the wrong number of hashes");
    }
    std::string hash = raw_sha256(std::string("\x00", 1) + entry.body);
    for (int i = 0; i < inner; ++i) {
        const std::string& sibling = entry.proof_hashes[static_cast<std::size_t>(i)];
        hash = ((index >> i) & 1) == 0 ? node_hash(hash, sibling) : node_hash(sibling, hash);
    }
    for (std::size_t i = static_cast<std::size_t>(inner); i < entry.proof_hashes.size(); ++i) {
        hash = node_hash(entry.proof_hashes[i], hash);
    }
    if (hash != entry.root_hash) {
        return invalid(name, "the inclusion proof does not lead to the tree's root (the entry is not in the log)");
    }
    return {};
}

// The checkpoint: a signed note "origin\nsize\nbase64(root)\n\n— name base64(hint || sig)\n".
Result<void> check_checkpoint(const LogEntry& entry, const EcKey& log, const std::string& name) {
    const std::string& note = entry.checkpoint;
    const std::size_t split = note.find("\n\n");
    if (split == std::string::npos || note.find("\n\n", split + 1) != std::string::npos) {
        return invalid(name, "the checkpoint is not a signed note");
    }
    const std::string text = note.substr(0, split + 1);
    const std::size_t first = text.find('\n');
    const std::size_t second = text.find('\n', first + 1);
    const std::size_t third = second == std::string::npos ? std::string::npos : text.find('\n', second + 1);
    if (third == std::string::npos || text.substr(first + 1, second - first - 1) != std::to_string(entry.tree_size)) {
        return invalid(name, "the checkpoint is not of the inclusion proof's tree size");
    }
    auto root = base64_decode(text.substr(second + 1, third - second - 1), "checkpoint root");
    if (!root || *root != entry.root_hash) {
        return invalid(name, "the checkpoint's root is not the inclusion proof's");
    }
    const std::string dash = "\xe2\x80\x94 "; // "— "
    std::size_t at = split + 2;
    while (at < note.size()) {
        const std::size_t end = std::min(note.find('\n', at), note.size());
        const std::string line = note.substr(at, end - at);
        at = end + 1;
        const std::size_t space = line.rfind(' ');
        if (!line.starts_with(dash) || space == std::string::npos) {
            continue;
        }
        auto signature = base64_decode(line.substr(space + 1), "checkpoint signature");
        if (signature && signature->size() > 4 && signature->compare(0, 4, entry.log_id, 0, 4) == 0) {
            if (!log.verify(text, signature->substr(4), name)) {
                return invalid(name, "the checkpoint's signature does not verify with the log's key");
            }
            return {};
        }
    }
    return invalid(name, "the checkpoint is not signed by the log that holds the entry");
}

std::string certificate_pem(X509* certificate) {
    Bio bio(BIO_new(BIO_s_mem()));
    PEM_write_bio_X509(bio.get(), certificate);
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(length));
}

// The entry's body (Rekor's dsse 0.0.1) names this envelope: its payload's hash, its
// signature and the certificate that verifies it.
Result<void> check_body(const LogEntry& entry, const SignatureBundle& bundle, X509* leaf, const std::string& name) {
    if (entry.kind != "dsse" || entry.version != "0.0.1") {
        return invalid(name, "a log entry of kind " + entry.kind.substr(0, 40) + " " + entry.version.substr(0, 20) +
                                 " (ringload checks dsse 0.0.1 entries)");
    }
    const json body = json::parse(entry.body, nullptr, false);
    const json* spec = body.is_object() && body.contains("spec") ? &body["spec"] : nullptr;
    if (spec == nullptr || !spec->is_object() || body.value("kind", "") != "dsse" ||
        body.value("apiVersion", "") != "0.0.1") {
        return invalid(name, "the log entry's body is not a dsse 0.0.1 entry");
    }
    const json expected_hash = {{"algorithm", "sha256"}, {"value", sha256_hex(bundle.payload)}};
    if (!spec->contains("payloadHash") || (*spec)["payloadHash"] != expected_hash) {
        return invalid(name, "the log entry is for another payload (its payload hash differs)");
    }
    const json expected_signatures = json::array(
        {{{"signature", base64_encode(bundle.signature)}, {"verifier", base64_encode(certificate_pem(leaf))}}});
    if (!spec->contains("signatures") || (*spec)["signatures"] != expected_signatures) {
        return invalid(name, "the log entry records another signature or certificate than the bundle's");
    }
    return {};
}

std::string text_of(const ASN1_STRING* text) {
    return std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(text)),
                       static_cast<std::size_t>(ASN1_STRING_length(text)));
}

} // namespace

namespace {

// The leaf chains, at `when`, to the trusted root's authorities (each of them an anchor, as
// sigstore verifies: the intermediate is what signs leaves); returns the leaf's issuer.
Result<Certificate> check_chain(X509* leaf, const TrustedRoot& root, std::int64_t when, const std::string& name) {
    std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
    for (const std::string& der : root.authority_certificates) {
        if (Certificate authority = certificate_from_der(der)) {
            X509_STORE_add_cert(store.get(), authority.get());
        }
    }
    std::unique_ptr<X509_STORE_CTX, StoreContextFree> context(X509_STORE_CTX_new());
    X509_STORE_CTX_init(context.get(), store.get(), leaf, nullptr);
    X509_VERIFY_PARAM* parameters = X509_STORE_CTX_get0_param(context.get());
    X509_VERIFY_PARAM_set_flags(parameters, X509_V_FLAG_PARTIAL_CHAIN);
    X509_VERIFY_PARAM_set_time(parameters, static_cast<time_t>(when));
    if (X509_verify_cert(context.get()) != 1) {
        return invalid(name, std::string("the certificate does not chain to the trusted root at the log's time: ") +
                                 X509_verify_cert_error_string(X509_STORE_CTX_get_error(context.get())));
    }
    if (!may_sign(leaf)) {
        return invalid(name, "the certificate is not for signing");
    }
    STACK_OF(X509)* chain = X509_STORE_CTX_get0_chain(context.get());
    if (sk_X509_num(chain) < 2) {
        return invalid(name, "the certificate is itself in the trusted root");
    }
    X509* issuer = sk_X509_value(chain, 1);
    X509_up_ref(issuer);
    return Certificate(issuer);
}

void big_endian(std::string& out, std::uint64_t value, int bytes) {
    for (int i = bytes - 1; i >= 0; --i) {
        out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
    }
}

// The one SCT in the leaf, signed by a certificate transparency log of the root over the
// precertificate (the leaf's TBS without the SCT extension) and its issuer's key hash.
Result<void> check_sct(X509* leaf, X509* issuer, const TrustedRoot& root, const std::string& name) {
    using SctList = std::unique_ptr<STACK_OF(SCT), decltype([](STACK_OF(SCT) * list) { SCT_LIST_free(list); })>;
    SctList scts(static_cast<STACK_OF(SCT)*>(X509_get_ext_d2i(leaf, NID_ct_precert_scts, nullptr, nullptr)));
    if (!scts || sk_SCT_num(scts.get()) != 1) {
        return invalid(name, "the certificate does not carry exactly one certificate transparency SCT");
    }
    const SCT* sct = sk_SCT_value(scts.get(), 0);
    unsigned char* id = nullptr;
    const std::size_t id_length = SCT_get0_log_id(sct, &id);
    const LogKey* log = log_named(root.certificate_logs, std::string_view(reinterpret_cast<char*>(id), id_length));
    if (log == nullptr || SCT_get_version(sct) != SCT_VERSION_V1 ||
        SCT_get_signature_nid(sct) != NID_ecdsa_with_SHA256) {
        return invalid(name, "the certificate's SCT is from a log the trusted root does not hold");
    }
    Certificate precertificate(X509_dup(leaf));
    X509_EXTENSION_free(
        X509_delete_ext(precertificate.get(), X509_get_ext_by_NID(precertificate.get(), NID_ct_precert_scts, -1)));
    unsigned char* tbs = nullptr;
    const int tbs_length = i2d_re_X509_tbs(precertificate.get(), &tbs);
    unsigned char* issuer_key = nullptr;
    const int issuer_key_length = i2d_X509_PUBKEY(X509_get_X509_PUBKEY(issuer), &issuer_key);
    if (tbs_length <= 0 || issuer_key_length <= 0) {
        OPENSSL_free(tbs);
        OPENSSL_free(issuer_key);
        return invalid(name, "cannot encode the precertificate");
    }
    std::string signed_bytes(2, '\0'); // version 1 (0), certificate_timestamp (0)
    big_endian(signed_bytes, SCT_get_timestamp(sct), 8);
    big_endian(signed_bytes, 1, 2); // precert_entry
    signed_bytes += raw_sha256(std::string_view(reinterpret_cast<char*>(issuer_key), issuer_key_length));
    big_endian(signed_bytes, static_cast<std::uint64_t>(tbs_length), 3);
    signed_bytes.append(reinterpret_cast<char*>(tbs), static_cast<std::size_t>(tbs_length));
    OPENSSL_free(tbs);
    OPENSSL_free(issuer_key);
    unsigned char* extensions = nullptr;
    const std::size_t extensions_length = SCT_get0_extensions(sct, &extensions);
    big_endian(signed_bytes, extensions_length, 2);
    signed_bytes.append(reinterpret_cast<char*>(extensions), extensions_length);
    unsigned char* signature = nullptr;
    const std::size_t signature_length = SCT_get0_signature(sct, &signature);
    RL_TRY(key, EcKey::public_from_der(log->der, name + ": a CT log's key"));
    if (!key.verify(signed_bytes, std::string_view(reinterpret_cast<char*>(signature), signature_length), name)) {
        return invalid(name, "the certificate's SCT does not verify with its CT log's key");
    }
    return {};
}

// The certificate's SAN values: email addresses, URIs, and Sigstore's otherName.
std::vector<std::string> identities_of(X509* leaf) {
    std::vector<std::string> found;
    // Fulcio's otherName for a username identity.
    const std::unique_ptr<ASN1_OBJECT, decltype([](ASN1_OBJECT* o) { ASN1_OBJECT_free(o); })> sigstore_username(
        OBJ_txt2obj("1.3.6.1.4.1.57264.1.7", 1));
    using Names = std::unique_ptr<GENERAL_NAMES, decltype([](GENERAL_NAMES* names) { GENERAL_NAMES_free(names); })>;
    Names names(static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(leaf, NID_subject_alt_name, nullptr, nullptr)));
    for (int i = 0; names && i < sk_GENERAL_NAME_num(names.get()); ++i) {
        const GENERAL_NAME* entry = sk_GENERAL_NAME_value(names.get(), i);
        if (entry->type == GEN_EMAIL || entry->type == GEN_URI) {
            found.push_back(text_of(entry->d.ia5));
        } else if (entry->type == GEN_OTHERNAME && entry->d.otherName->value->type == V_ASN1_UTF8STRING &&
                   OBJ_cmp(entry->d.otherName->type_id, sigstore_username.get()) == 0) {
            found.push_back(text_of(entry->d.otherName->value->value.utf8string));
        }
    }
    return found;
}

// Fulcio's OIDC issuer extension: 1.3.6.1.4.1.57264.1.1 (raw text), else .1.8 (a UTF8String).
std::string issuer_of(X509* leaf) {
    for (const char* oid : {"1.3.6.1.4.1.57264.1.1", "1.3.6.1.4.1.57264.1.8"}) {
        std::unique_ptr<ASN1_OBJECT, decltype([](ASN1_OBJECT* o) { ASN1_OBJECT_free(o); })> object(OBJ_txt2obj(oid, 1));
        const int at = X509_get_ext_by_OBJ(leaf, object.get(), -1);
        if (at < 0) {
            continue;
        }
        const std::string value = text_of(X509_EXTENSION_get_data(X509_get_ext(leaf, at)));
        if (std::string_view(oid).ends_with(".1.1")) {
            return value;
        }
        const auto* bytes = reinterpret_cast<const unsigned char*>(value.data());
        ASN1_UTF8STRING* text = d2i_ASN1_UTF8STRING(nullptr, &bytes, static_cast<long>(value.size()));
        std::string decoded = text != nullptr ? text_of(text) : "";
        ASN1_UTF8STRING_free(text);
        return decoded;
    }
    return "";
}

Result<void> check_identity(X509* leaf, const KeylessIdentity& who, const std::string& name) {
    const std::vector<std::string> identities = identities_of(leaf);
    if (std::find(identities.begin(), identities.end(), who.identity) == identities.end()) {
        return invalid(name, "signed by " + (identities.empty() ? std::string("no identity") : identities.front()) +
                                 ", not " + who.identity);
    }
    const std::string issuer = issuer_of(leaf);
    if (issuer != who.issuer) {
        return invalid(name, "the signer's identity was vouched for by " +
                                 (issuer.empty() ? std::string("no issuer") : issuer) + ", not " + who.issuer);
    }
    return {};
}

std::string utc_text(std::int64_t seconds) {
    const std::time_t when = static_cast<std::time_t>(seconds);
    std::tm parts{};
    gmtime_r(&when, &parts);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S UTC", &parts);
    return text;
}

} // namespace

Result<EcKey> verify_keyless(const SignatureBundle& bundle, const TrustedRoot& root, const KeylessIdentity& who,
                             const std::string& name, std::string& signer) {
    if (who.identity.empty() || who.issuer.empty()) {
        return fail(errc::invalid_argument, name +
                                                ": a keyless signature: give who must have signed it "
                                                "(--identity and --identity-issuer; identity=, identity_issuer=)");
    }
    if (bundle.log_entries.size() != 1) {
        return invalid(name, "the bundle must hold exactly one transparency log entry");
    }
    const LogEntry& entry = bundle.log_entries.front();
    Certificate leaf = certificate_from_der(bundle.certificates.front());
    if (!leaf) {
        return invalid(name, "the signing certificate is not DER X.509");
    }
    const LogKey* log = log_named(root.transparency_logs, entry.log_id);
    if (log == nullptr) {
        return invalid(name, "the transparency log that recorded it is not in the trusted root");
    }
    RL_TRY(log_key, EcKey::public_from_der(log->der, name + ": the transparency log's key"));
    RL_TRY_VOID(check_promise(entry, log_key, name));
    RL_TRY_VOID(check_inclusion(entry, name));
    RL_TRY_VOID(check_checkpoint(entry, log_key, name));
    RL_TRY_VOID(check_body(entry, bundle, leaf.get(), name));
    RL_TRY(issuer, check_chain(leaf.get(), root, entry.integrated_time, name));
    RL_TRY_VOID(check_sct(leaf.get(), issuer.get(), root, name));
    RL_TRY_VOID(check_identity(leaf.get(), who, name));
    signer = "keyless: " + who.identity + " (" + who.issuer + "), logged " + utc_text(entry.integrated_time);
    return EcKey::from_certificate(bundle.certificates.front(), name + ": the signing certificate's key");
}

} // namespace ringload::model_signing
