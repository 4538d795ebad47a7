// formats/safetensors/header_json.hpp
//
// The header of a safetensors file, as the reference writer (huggingface/safetensors 0.4.5)
// makes it:
//
//  file:  [ u64 LE length N ][ JSON, padded with spaces to N bytes ][ data of every tensor ]
//  JSON:  {"__metadata__":{"k":"v"},"name":{"dtype":"F16","shape":[2,3],"data_offsets":[0,12]},...}
//
// Compact JSON, "__metadata__" first (absent when there is none), then the tensors in data
// order; offsets are relative to the data start. The spaces make 8 + N a multiple of the
// alignment (8 in the reference; 64 keeps every tensor cache-line aligned for mmap users).
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload::safetensors {

struct HeaderEntry {
    std::string name;
    DType dtype = DType::float32;
    std::vector<std::uint64_t> shape;
    std::uint64_t begin_bytes = 0; // relative to the data start
    std::uint64_t end_bytes = 0;
};

// "F16", "BF16", "BOOL", "F8_E4M3", "C64", ... or an error for a type safetensors cannot store
// (complex32, complex128).
Result<std::string_view> dtype_name(DType dtype);

// The reference's order for the data: by dtype rank descending (wider types first, so that
// each tensor stays aligned to its item size), then by name. Rank follows the reference's
// enum order (safetensors_rank in dtype_names.hpp); -1 for types dtype_name() refuses.
int reference_rank(DType dtype);

// Length field + JSON + padding: the bytes before the data. `alignment_bytes` is 8 or 64.
// Fails on a name or metadata string that is not valid UTF-8.
Result<std::vector<std::byte>> build_header(std::span<const HeaderEntry> entries,
                                            std::span<const std::pair<std::string, std::string>> metadata,
                                            std::size_t alignment_bytes);

} // namespace ringload::safetensors
