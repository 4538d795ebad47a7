// formats/model_signing/openssl_handles.hpp
//
// The certificate helpers trust.cpp and keyless.cpp share, and the OpenSSL handle types they
// use. Included by those .cpp files only: OpenSSL stays out of the headers.
#pragma once

#include "ringload/engine/openssl_handles.hpp"

#include <openssl/x509v3.h>

#include <cstdint>
#include <string>

namespace ringload::model_signing {

// The deleters are the engine's (engine/include/ringload/engine/openssl_handles.hpp).
using openssl::Bio;
using openssl::BioFree;
using openssl::Certificate;
using openssl::MdContextFree;
using openssl::StackFree;
using openssl::StoreContextFree;
using openssl::StoreFree;
using openssl::X509Free;

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
