// formats/model_signing/trust.cpp
#include "formats/model_signing/trust.hpp"

#include "formats/model_signing/openssl_handles.hpp"

#include "ringload/engine/hashes.hpp"

#include <openssl/bio.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace ringload::model_signing {
namespace {

// The curve's name as Model Signing knows it, or "" for a key it does not take.
std::string curve_of(EVP_PKEY* key) {
    char group[64] = {};
    std::size_t length = 0;
    if (key == nullptr || EVP_PKEY_get_base_id(key) != EVP_PKEY_EC ||
        EVP_PKEY_get_utf8_string_param(key, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group), &length) != 1) {
        return "";
    }
    const std::string_view name(group, length);
    return name == SN_X9_62_prime256v1 ? "P-256" : name == SN_secp384r1 ? "P-384" : name == SN_secp521r1 ? "P-521" : "";
}

const EVP_MD* digest_for(const std::string& curve) {
    return curve == "P-256" ? EVP_sha256() : curve == "P-384" ? EVP_sha384() : EVP_sha512();
}

// Every certificate of a PEM text (a chain file holds one or more).
std::vector<Certificate> certificates_from_pem(const std::string& pem) {
    std::vector<Certificate> certificates;
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    while (X509* certificate = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
        certificates.emplace_back(certificate);
    }
    return certificates;
}

} // namespace

void EcKey::KeyFree::operator()(evp_pkey_st* key) const noexcept {
    EVP_PKEY_free(key);
}

Result<EcKey> EcKey::adopt(OwnedKey key, const std::string& name) {
    std::string curve = curve_of(key.get());
    if (curve.empty()) {
        return fail(errc::unsupported,
                    name + ": not an ECDSA key on P-256, P-384 or P-521 (what Model Signing signs with)");
    }
    return EcKey(std::move(key), std::move(curve));
}

Result<EcKey> EcKey::public_from_der(std::string_view der, const std::string& name) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(der.data());
    EVP_PKEY* key = d2i_PUBKEY(nullptr, &bytes, static_cast<long>(der.size()));
    if (key == nullptr) {
        return fail(errc::format_error, name + ": not a DER public key");
    }
    return adopt(OwnedKey(key), name);
}

Result<EcKey> EcKey::from_certificate(const std::string& der, const std::string& name) {
    Certificate certificate = certificate_from_der(der);
    if (!certificate) {
        return fail(errc::format_error, name + ": not a DER X.509 certificate");
    }
    return adopt(OwnedKey(X509_get_pubkey(certificate.get())), name);
}

Result<EcKey> EcKey::public_from_pem(std::string_view pem, const std::string& name) {
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    EVP_PKEY* key = PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
    if (key == nullptr) {
        return fail(errc::invalid_argument, name + ": not a PEM public key");
    }
    return adopt(OwnedKey(key), name);
}

Result<EcKey> EcKey::private_from_pem(std::string_view pem, const std::string& name) {
    Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
    if (key == nullptr) {
        return fail(errc::invalid_argument, name + ": not a PEM private key (an encrypted one is not taken)");
    }
    return adopt(OwnedKey(key), name);
}

std::string EcKey::public_pem() const {
    Bio bio(BIO_new(BIO_s_mem()));
    PEM_write_bio_PUBKEY(bio.get(), key_.get());
    char* data = nullptr;
    const long length = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(length));
}

Result<void> EcKey::verify(std::string_view message, std::string_view der_signature, const std::string& name) const {
    std::unique_ptr<EVP_MD_CTX, MdContextFree> context(EVP_MD_CTX_new());
    const bool valid = EVP_DigestVerifyInit(context.get(), nullptr, digest_for(curve_), nullptr, key_.get()) == 1 &&
                       EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(der_signature.data()),
                                        der_signature.size(), reinterpret_cast<const unsigned char*>(message.data()),
                                        message.size()) == 1;
    if (!valid) {
        return fail(errc::signature_invalid, name + ": the signature does not verify with the " + curve_ +
                                                 " key given (another key signed it, or the statement changed)");
    }
    return {};
}

Result<std::string> EcKey::sign(std::string_view message) const {
    std::unique_ptr<EVP_MD_CTX, MdContextFree> context(EVP_MD_CTX_new());
    std::size_t length = 0;
    const auto* bytes = reinterpret_cast<const unsigned char*>(message.data());
    if (EVP_DigestSignInit(context.get(), nullptr, digest_for(curve_), nullptr, key_.get()) != 1 ||
        EVP_DigestSign(context.get(), nullptr, &length, bytes, message.size()) != 1) {
        return fail(errc::invalid_argument, "cannot sign with this " + curve_ + " key");
    }
    std::string signature(length, '\0');
    if (EVP_DigestSign(context.get(), reinterpret_cast<unsigned char*>(signature.data()), &length, bytes,
                       message.size()) != 1) {
        return fail(errc::invalid_argument, "cannot sign with this " + curve_ + " key");
    }
    signature.resize(length);
    return signature;
}

Result<EcKey> verify_certificate_chain(const std::vector<std::string>& bundle_certificates,
                                       const std::vector<std::string>& trusted_pems, const std::string& name) {
    Certificate leaf = certificate_from_der(bundle_certificates.front());
    if (!leaf) {
        return fail(errc::format_error, name + ": the signing certificate is not DER X.509");
    }
    std::unique_ptr<X509_STORE, StoreFree> store(X509_STORE_new());
    std::size_t anchors = 0;
    for (const std::string& pem : trusted_pems) {
        for (Certificate& certificate : certificates_from_pem(pem)) {
            X509_STORE_add_cert(store.get(), certificate.get());
            ++anchors;
        }
    }
    if (anchors == 0) {
        return fail(errc::invalid_argument,
                    name + ": no trusted certificate given (the certificate chain files hold none)");
    }
    std::unique_ptr<STACK_OF(X509), StackFree> untrusted(sk_X509_new_null());
    for (std::size_t i = 1; i < bundle_certificates.size(); ++i) {
        if (Certificate intermediate = certificate_from_der(bundle_certificates[i])) {
            sk_X509_push(untrusted.get(), intermediate.release());
        }
    }
    std::unique_ptr<X509_STORE_CTX, StoreContextFree> context(X509_STORE_CTX_new());
    X509_STORE_CTX_init(context.get(), store.get(), leaf.get(), untrusted.get());
    if (X509_verify_cert(context.get()) != 1) {
        return fail(errc::signature_invalid,
                    name + ": the signing certificate is not trusted: " +
                        X509_verify_cert_error_string(X509_STORE_CTX_get_error(context.get())));
    }
    if (!may_sign(leaf.get())) {
        return fail(errc::signature_invalid, name +
                                                 ": the signing certificate is not for signing (neither key usage "
                                                 "digitalSignature nor extended key usage codeSigning)");
    }
    return EcKey::adopt(EcKey::OwnedKey(X509_get_pubkey(leaf.get())), name + ": the signing certificate's key");
}

std::string sha256_hex(std::string_view bytes) {
    const Sha256Digest digest = sha256(std::as_bytes(std::span(bytes.data(), bytes.size())));
    return ringload::to_hex(digest);
}

} // namespace ringload::model_signing
