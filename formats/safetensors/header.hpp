// formats/safetensors/header.hpp
//
// A safetensors file is an 8-byte little-endian header length N, N bytes of JSON, then the
// data: {"name": {"dtype": "F16", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
// "__metadata__": {"key": "value"}}, offsets relative to the data's start.
//
// The checks are the reference implementation's (safetensors 0.4, Rust `validate`): a header
// of at most 100 MB that starts with '{', each tensor's byte count equal to its shape times
// its dtype's size, and the tensors, sorted by offset, covering the data without holes or
// overlaps up to the file's last byte.
#pragma once

#include "ringload/error.hpp"
#include "ringload/tensor_info.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace ringload::safetensors {

inline constexpr std::uint64_t length_field_bytes = 8;
inline constexpr std::uint64_t max_header_bytes = 100'000'000;

// Checks the length field against the file's size; returns N.
Result<std::uint64_t> parse_header_length(std::span<const std::byte> first_bytes, std::uint64_t file_size);

// The Index of a file whose header (the N JSON bytes) is `header`; errors name the tensor.
Result<Index> parse_header(std::span<const std::byte> header, std::uint64_t file_size);

} // namespace ringload::safetensors
