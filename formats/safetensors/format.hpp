// formats/safetensors/format.hpp
//
// The safetensors format's registered description (ringload/format.hpp): an 8-byte length and
// a JSON header, then plain data; no hashes, no encryption; written to local files.
#pragma once

#include "ringload/format.hpp"

namespace ringload::safetensors {

extern const Format format;

} // namespace ringload::safetensors
