// formats/safetensors/reader.hpp
//
// Reads a safetensors file's index with two small reads: the 8-byte header length, then the
// JSON header (header.hpp). The data that follows is plain, C-contiguous and little-endian:
// one source range per tensor.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/tensor_info.hpp"

#include <span>

namespace ringload::safetensors {

// Whether the first bytes look like safetensors: a length that fits the file, then '{'.
bool has_safetensors_shape(std::span<const std::byte> first_bytes, std::uint64_t file_size) noexcept;

Task<Result<Index>> read_index(Source& source);

} // namespace ringload::safetensors
