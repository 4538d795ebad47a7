// bindings/cpp/src/load/load_layout.hpp
//
// Which tensors a load produces, in which dtype, and where each one's bytes go: the caller's
// memory (LoadOptions::destination) or an offset in the one block the load allocates (a host
// arena or a device allocation), each at a 64-byte boundary; or, where the source reads in
// aligned blocks straight into tensors (O_DIRECT), a large tensor at its data's file offset
// modulo that alignment, so that the blocks land in it directly:
//
//   file:   ....|....[== tensor ==========]|....     | = 4096-byte boundaries
//   arena:  |....[== tensor ==========]|....          same distance from a boundary
//
// Such a tensor is as aligned as its bytes are in the file (safetensors: 8 bytes at least),
// never less than its item size; the others keep 64 bytes.
#pragma once

#include "ringload/ringload.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringload {

struct PlannedTensor {
    std::size_t index = 0;         // into Index::tensors
    DType dtype = DType::float32;  // as loaded
    std::uint64_t byte_length = 0; // as loaded
    bool converts = false;         // stored in another (floating) dtype
    std::byte* given = nullptr;    // the caller's destination, or null
    std::size_t owned_offset = 0;  // in the load's own block, when not given

    // Where the tensor's bytes go, given the load's own block.
    std::byte* place(std::byte* owned) const noexcept { return given != nullptr ? given : owned + owned_offset; }
};

struct LoadLayout {
    std::vector<PlannedTensor> tensors; // in file order
    std::size_t owned_bytes = 0;        // the block the load allocates
    std::size_t raw_bytes = 0;          // stored bytes of the converting tensors (CPU scratch)
};

// `read_alignment`: the source's, when its reads may go straight into tensor memory (1 or 0:
// no placement by file offset).
LoadLayout plan_load(const Index& index, const LoadOptions& options, std::size_t read_alignment = 1);

// The first offset at or after `cursor` that lies as far from an `alignment` boundary as
// `file_offset` does: where a tensor (or torch storage) goes for aligned reads to land in it.
inline std::size_t offset_at_file_phase(std::size_t cursor, std::uint64_t file_offset, std::size_t alignment) {
    const std::size_t phase = static_cast<std::size_t>(file_offset % alignment);
    return cursor + (phase + alignment - cursor % alignment) % alignment;
}

// The tensor as the caller sees it after the load: its dtype and length as loaded.
TensorInfo loaded_info(const TensorInfo& stored, const PlannedTensor& planned);

} // namespace ringload
