// formats/model_signing/dsse.hpp
//
// DSSE's pre-authentication encoding, the bytes a model signature signs:
// "DSSEv1 <len(type)> <type> <len(payload)> <payload>", lengths in ASCII decimal. Model Signing
// always signs with the in-toto payload type, whatever the envelope says.
#pragma once

#include <string>
#include <string_view>

namespace ringload::model_signing {

std::string dsse_pae(std::string_view payload);

} // namespace ringload::model_signing
