// formats/torch/reader.hpp
//
// Reads the Index of a PyTorch torch.save zip checkpoint (.pt/.pth/.bin, torch >= 1.6) with at
// most three reads for a file torch wrote: the tail (end records and usually the central
// directory), the central directory if it did not fit, and data.pkl with the small records
// after it (.format_version, .storage_alignment, byteorder). Small files take one read.
// Storage offsets are computed from the central directory (torch-zip-format.md §6.3), never by
// reading each local header; only a zip not packed the way torch packs it falls back to one
// small read per storage's local header.
//
// data.pkl is interpreted by an allowlist pickle machine (pickle_machine.hpp): nothing is
// imported or called, and a pickle naming anything else is refused with the name.
//
// Byte order: Index::big_endian is set for byteorder 'big'; storage bytes are left as stored.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/tensor_info.hpp"

#include <cstddef>
#include <span>

namespace ringload::torch_zip {

// "PK\3\4": what torch.load itself checks.
bool has_torch_zip_magic(std::span<const std::byte> first_bytes) noexcept;

// The pre-1.6 formats (§12): a pickle stream (0x80 <protocol>, usually followed by the LONG1
// magic number) or a tar file ('ustar' at offset 257, when first_bytes reaches that far).
bool has_legacy_torch_magic(std::span<const std::byte> first_bytes) noexcept;
// Why such a file is not read, and what to do instead (the reader's and detection's words).
Error legacy_error();

struct ReadIndexOptions {
    std::size_t tail_read_bytes = 256 << 10; // the first read: the file's last bytes
    bool scan_state_dict = true;             // the fast path for a flat state dict (state_dict_scan.hpp)
};

Task<Result<Index>> read_index(Source& source);
Task<Result<Index>> read_index(Source& source, ReadIndexOptions options);

} // namespace ringload::torch_zip
