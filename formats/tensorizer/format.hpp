// formats/tensorizer/format.hpp
//
// The tensorizer format's registered description (ringload/format.hpp): "|TZR|" files, with
// stored hashes and optional encryption; written to local files, s3:// and redis://.
#pragma once

#include "ringload/format.hpp"

namespace ringload::tensorizer {

extern const Format format;

} // namespace ringload::tensorizer
