// formats/torch/zip_directory.hpp
//
// The zip container torch.save writes (torch-zip-format.md §2-§3, §6): end records, central
// directory, archive prefix, and each record's data offset computed from the central directory
// alone, so that a reader needs no read per local header.
//
//  [ local hdr | name | zip64? | 'FB' pad ][ data (A-aligned) ][ descriptor ] ... per record
//  [ central directory ][ zip64 end record ][ zip64 locator ][ end record ]
#pragma once

#include "ringload/error.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ringload::torch_zip {

inline constexpr std::uint64_t zip_max32 = 0xFFFFFFFFu;
inline constexpr std::size_t end_record_bytes = 22;
inline constexpr std::size_t zip64_locator_bytes = 20;
inline constexpr std::size_t zip64_end_record_bytes = 56;
inline constexpr std::size_t local_header_bytes = 30;
inline constexpr std::size_t central_header_bytes = 46;
inline constexpr std::uint64_t storage_alignment_default = 64;

// Where the central directory is, from the end records.
struct ZipEnd {
    std::uint64_t entry_count = 0;
    std::uint64_t directory_offset_bytes = 0;
    std::uint64_t directory_length_bytes = 0;
    // Offset of the zip64 end record when a zip64 locator was found; its values replace the
    // (possibly saturated) 16/32-bit ones once apply_zip64_end_record has read it.
    std::optional<std::uint64_t> zip64_record_offset_bytes;
    std::uint64_t end_record_offset_bytes = 0; // of the classic end record
};

// `tail` holds the last tail.size() bytes of a source of `source_size_bytes` bytes. Finds the
// end record (scanning back over a comment) and the zip64 locator before it.
Result<ZipEnd> find_zip_end(std::span<const std::byte> tail, std::uint64_t source_size_bytes);

// `record` holds the 56 bytes at end.zip64_record_offset_bytes.
Result<ZipEnd> apply_zip64_end_record(ZipEnd end, std::span<const std::byte> record);

struct ZipEntry {
    // The full name, with the archive prefix: a view into the directory bytes given to
    // parse_central_directory, which must outlive the entries (a million strings were a tenth
    // of reading the directory).
    std::string_view name;
    std::uint16_t flags = 0;
    std::uint16_t method = 0;
    std::uint32_t crc32 = 0;
    std::uint64_t compressed_length_bytes = 0;
    std::uint64_t length_bytes = 0; // uncompressed
    std::uint64_t header_offset_bytes = 0;
};

// Entry positions ordered by header offset (ties in std::sort's order).
std::vector<std::size_t> entries_by_header_offset(const std::vector<ZipEntry>& entries);

// `directory` holds exactly the central directory's bytes.
Result<std::vector<ZipEntry>> parse_central_directory(std::span<const std::byte> directory, const ZipEnd& end);

// The first entry's name up to its first '/'; every entry must start with "<prefix>/" (a name
// that appears twice is found by the reader's name table, reader.cpp).
Result<std::string> archive_prefix(const std::vector<ZipEntry>& entries);

// §6.1: where torch.save put the data of a record whose local header is at header_offset.
std::uint64_t torch_data_offset(std::uint64_t header_offset_bytes, std::size_t name_bytes, std::uint64_t length_bytes,
                                std::uint64_t alignment_bytes) noexcept;

// §6.3 (a): each record's data offset computed by §6.1, if the records are packed exactly as
// torch.save packs them (first at 0, each next header right after the previous descriptor, the
// last record ending at the central directory). nullopt otherwise: then only the local headers
// tell where data starts. Same order as `entries`.
std::optional<std::vector<std::uint64_t>> torch_layout_data_offsets(const std::vector<ZipEntry>& entries,
                                                                    std::uint64_t directory_offset_bytes,
                                                                    std::uint64_t alignment_bytes);

// The data offset a local header states (`bytes` start at the header; at least 30 bytes, and
// the name when the caller has them). Checks the signature, the name and the sizes it can.
Result<std::uint64_t> local_header_data_offset(std::span<const std::byte> bytes, const ZipEntry& entry);

} // namespace ringload::torch_zip
