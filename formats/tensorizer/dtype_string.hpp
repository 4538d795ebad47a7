// formats/tensorizer/dtype_string.hpp
//
// tensorizer stores numpy's dtype.str ("<f4", "|b1"), or for torch types numpy lacks an
// "opaque" string: "<V2" NUL "torch.bfloat16". The item size always comes from the numpy part.
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/error.hpp"

#include <string>
#include <string_view>

namespace ringload::tensorizer {

struct FileDType {
    DType dtype = DType::float32;
    bool opaque = false;
};

Result<FileDType> parse_dtype_string(std::string_view text);

// The inverse, for writers: "<f4", "|b1", "<V2\0torch.bfloat16".
std::string dtype_string(DType dtype);
// Whether numpy lacks the type, so that it is stored as an opaque string (bf16, complex32, ...).
bool is_opaque(DType dtype);

} // namespace ringload::tensorizer
