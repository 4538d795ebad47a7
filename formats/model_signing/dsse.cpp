// formats/model_signing/dsse.cpp
#include "formats/model_signing/dsse.hpp"

#include "formats/model_signing/bundle.hpp"

namespace ringload::model_signing {

std::string dsse_pae(std::string_view payload) {
    std::string pae = "DSSEv1 " + std::to_string(in_toto_payload_type.size()) + " " +
                      std::string(in_toto_payload_type) + " " + std::to_string(payload.size()) + " ";
    pae.append(payload);
    return pae;
}

} // namespace ringload::model_signing
