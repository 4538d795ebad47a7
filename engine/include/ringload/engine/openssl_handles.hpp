// engine/include/ringload/engine/openssl_handles.hpp
//
// OpenSSL objects owned by unique_ptr, for the .cpp files that call OpenSSL (signatures in
// formats/model_signing, the GCS service-account JWT in io/): one set of deleters, so that
// each object is freed by the one function OpenSSL gives for it.
//
//     openssl::Bio bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
//     openssl::Key key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
//
// Include it from .cpp files only: OpenSSL's headers stay out of every other header.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>

namespace ringload::openssl {

struct BioFree {
    void operator()(BIO* bio) const { BIO_free(bio); }
};
struct KeyFree {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct MdContextFree {
    void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
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

using Bio = std::unique_ptr<BIO, BioFree>;
using Key = std::unique_ptr<EVP_PKEY, KeyFree>;
using MdContext = std::unique_ptr<EVP_MD_CTX, MdContextFree>;
using Certificate = std::unique_ptr<X509, X509Free>;

} // namespace ringload::openssl
