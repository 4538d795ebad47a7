// formats/torch_writer/zip_writer_layout.hpp
//
// The zip container exactly as PyTorch's writer (PyTorchStreamWriter + miniz) makes it
// (docs: torch-zip-format.md §2, §13.2), as pure functions of record names and sizes, so that
// a whole file is laid out before any byte of it is written:
//
//  [local hdr | name | zip64? | 'FB' pad][data, A-aligned][descriptor] ... [central dir][z64 EOCD][locator][EOCD]
//
// Local headers carry zero CRC and sizes (flag bit 3); the CRC goes in the data descriptor and
// the central directory, which come after the data: they are the only bytes that depend on
// the data. A 0-byte record has no descriptor. zip64 fields appear per record when its size or
// header offset is >= 0xFFFFFFFF; the zip64 end records are always written, as torch does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ringload::torch_writer {

constexpr std::uint64_t zip_max32 = 0xFFFFFFFF;
constexpr std::uint64_t zip_alignment_default = 64;

struct ZipRecord {
    std::string name; // full name, with the archive prefix: "archive/data/0"
    std::uint64_t size_bytes = 0;
    std::uint64_t header_offset = 0;
    std::uint64_t data_offset = 0; // a multiple of the alignment
    std::uint32_t crc32 = 0;       // filled in once known

    bool zip64() const noexcept { return size_bytes >= zip_max32 || header_offset >= zip_max32; }
    std::uint64_t header_bytes() const noexcept { return data_offset - header_offset; }
    std::uint64_t descriptor_offset() const noexcept { return data_offset + size_bytes; }
    std::uint64_t descriptor_bytes() const noexcept { return size_bytes == 0 ? 0 : (zip64() ? 24 : 16); }
    std::uint64_t end_offset() const noexcept { return descriptor_offset() + descriptor_bytes(); }
};

struct ZipLayout {
    std::vector<ZipRecord> records;   // in file order
    std::uint64_t central_offset = 0; // central directory, then the three end records
    std::uint64_t central_bytes = 0;  // the central directory alone
    std::uint64_t length_bytes = 0;   // the whole file
};

struct ZipEntry {
    std::string name;
    std::uint64_t size_bytes = 0;
};

// Places records back to back from offset 0, each one's data on an `alignment_bytes` boundary.
ZipLayout lay_out_zip(std::span<const ZipEntry> entries, std::uint64_t alignment_bytes = zip_alignment_default);

// [header_offset, data_offset): local header, name, local zip64 extra, 'FB' padding field.
std::vector<std::byte> local_header_bytes(const ZipRecord& record);
// [descriptor_offset, end_offset): empty for a 0-byte record.
std::vector<std::byte> descriptor_bytes(const ZipRecord& record);
// [central_offset, length_bytes): central directory, zip64 EOCD, zip64 locator, EOCD.
std::vector<std::byte> central_bytes(const ZipLayout& layout);

} // namespace ringload::torch_writer
