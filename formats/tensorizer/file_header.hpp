// formats/tensorizer/file_header.hpp
//
// The fixed 73 bytes at the start of a tensorizer file and the metadata index after them
// (tensorizer-format.md §3-§4):
//
//  [ |TZR| ][ version u32 ][ feature flags 32 B ][ tensor_size u64 ][ 0 u64 ][ count u64 ][ index_len u64 ]
//  [ index entry 0 ][ index entry 1 ] ... [ zero padding up to index_len ]
#pragma once

#include "ringload/error.hpp"
#include "ringload/tensor_info.hpp"

#include <cstdint>
#include <span>

namespace ringload::tensorizer {

inline constexpr std::size_t file_header_bytes = 73; // including index_len
inline constexpr std::uint32_t data_version_min = 1;
inline constexpr std::uint32_t data_version_max = 4;
// tensorizer reserves 256 KiB; we accept far larger indexes but not absurd ones.
inline constexpr std::uint64_t index_bytes_max = 1ull << 30;

struct FileHeader {
    std::uint32_t data_version = 0;
    std::uint64_t feature_flags = 0; // only bit 0 (encrypted) is defined
    std::uint64_t tensor_size_bytes = 0;
    std::uint64_t tensor_count = 0;
    std::uint64_t index_bytes = 0;

    // Version 3 always carries crypt-info blocks; version 4 when flag bit 0 is set.
    bool has_crypt_info() const noexcept {
        return data_version == 3 || (data_version >= 4 && (feature_flags & 1) != 0);
    }
};

// `bytes` is the start of the file (up to 73 bytes); `file_size` tells a short file from a
// corrupt one.
Result<FileHeader> parse_file_header(std::span<const std::byte> bytes, std::uint64_t file_size_bytes);

// Parses the index entries into tensors (file order) and checks them against each other and
// against the file size. Each TensorInfo's record/data offsets come from the index.
Result<Index> parse_index(const FileHeader& header, std::span<const std::byte> index_bytes,
                          std::uint64_t file_size_bytes);

} // namespace ringload::tensorizer
