// formats/tensorizer/tensor_header.hpp
//
// The per-tensor header that precedes each tensor's data (tensorizer-format.md §5.1, §6):
//
//  [ header_size u64 ][ module_idx u16 ][ type u8 ][ name ][ dtype ][ shape ]
//  [ hash_section_len u16 ][ hash_count u8 ][ (type u8, len u8, value) ... ]
//  [ crypt-info block, v3 / v4+flag only ][ data_length i64 ]   <- the last 8 bytes
//
// Stored hashes cover H' || data, where H' is this header with every hash *value* zeroed and
// the crypt-info block (with its length prefix) left out.
#pragma once

#include "ringload/error.hpp"
#include "ringload/tensor_info.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ringload::tensorizer {

enum class HashType : std::uint8_t { crc32 = 0, sha256 = 1 };

struct StoredHash {
    std::uint8_t type = 0;
    std::size_t value_offset_bytes = 0; // within the header
    std::size_t value_length_bytes = 0;
};

struct TensorHeader {
    std::uint16_t module_index = 0;
    std::uint8_t tensor_type = 0;
    std::string name;
    std::string dtype_text;
    std::vector<std::uint64_t> shape;
    std::vector<StoredHash> hashes;
    std::size_t crypt_offset_bytes = 0; // where the crypt-info block starts (0: none)
    std::size_t crypt_length_bytes = 0; // including its 8-byte length prefix
    std::int64_t data_length = 0;
};

// Parses a complete header. `has_crypt_info` comes from the file header.
Result<TensorHeader> parse_tensor_header(std::span<const std::byte> header_bytes, bool has_crypt_info);

// Checks that the header says what the index said about this tensor.
Result<void> check_header_matches_index(const TensorHeader& header, const TensorInfo& tensor);

// H': the bytes the stored hashes were computed over, before the data.
std::vector<std::byte> hash_input_prefix(std::span<const std::byte> header_bytes, const TensorHeader& header);

} // namespace ringload::tensorizer
