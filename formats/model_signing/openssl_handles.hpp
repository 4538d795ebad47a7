// formats/model_signing/openssl_handles.hpp
//
// OpenSSL objects owned (unique_ptr deleters) and the certificate helpers trust.cpp and
// keyless.cpp share. Included by those .cpp files only: OpenSSL stays out of the headers.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdint>
#include <memory>
#include <string>

namespace ringload::model_signing {

struct BioFree {
    void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
    void operator()(X509* x) const { X509_free(x); }
};
struct StoreFree {
    void operator()(X509_STORE* store) const { X509_STORE_free(store); }
};
struct StoreContextFree {
    void operator()(X509_STORE_CTX* context) const { X509_STORE_CTX_free(context); }
};
struct StackFree {
    void operator()(STACK_OF(X509) * stack) const { sk_X509_pop_free(stack, X509_free); }
};
struct MdContextFree {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};
using Bio = std::unique_ptr<BIO, BioFree>;
using Certificate = std::unique_ptr<X509, X509Free>;

inline Certificate certificate_from_der(const std::string& der) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(der.data());
    return Certificate(d2i_X509(nullptr, &bytes, static_cast<long>(der.size())));
}

// Key usage digitalSignature, or extended key usage codeSigning (either, as Model Signing).
inline bool may_sign(X509* leaf) {
    const std::uint32_t usage = X509_get_key_usage(leaf);
    const std::uint32_t extended = X509_get_extended_key_usage(leaf);
    // UINT32_MAX: the extension is absent (OpenSSL's "anything goes"), which grants nothing here.
    return (usage != UINT32_MAX && (usage & KU_DIGITAL_SIGNATURE) != 0) ||
           (extended != UINT32_MAX && (extended & XKU_CODE_SIGN) != 0);
}

} // namespace ringload::model_signing
