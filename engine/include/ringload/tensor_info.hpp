// engine/include/ringload/tensor_info.hpp
//
// What a format reader found in a file (the Index): for every tensor its name, dtype, shape
// and where its bytes are. Formats fill it; the engine plans reads from it; callers pick from
// it what to load.
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/format.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace ringload {

// One component of a structured name: a dict key or a list index.
using PathComponent = std::variant<std::string, std::uint64_t>;

struct TensorInfo {
    std::string name;                // as stored (tensorizer: raw bytes of the name field)
    std::vector<PathComponent> path; // one element for a plain name
    DType dtype = DType::float32;
    std::vector<std::uint64_t> shape; // empty for a 0-d tensor
    std::uint64_t byte_length = 0;    // bytes a reader produces (numel * itemsize)
    bool is_meta = false;             // no data stored: loads as zeros

    // Where its bytes are in the source. For tensorizer the record is header + data.
    std::uint64_t record_offset_bytes = 0;
    std::uint64_t data_offset_bytes = 0;
    std::uint64_t data_length_bytes = 0; // stored bytes (0 for meta tensors)

    // Format-specific extras that callers may show (tensorizer: module_idx, tensor_type).
    std::uint16_t module_index = 0;
    std::uint8_t tensor_type = 0;

    // Formats whose tensors are views of shared storages (torch zip). The tensor reads elements
    // storage_offset + sum(i_k * strides[k]) of Index::storages[*storage_index]; tensors that
    // name the same storage share its memory after a load. data_offset_bytes and
    // data_length_bytes then give the storage bytes the view spans (for planning and filters).
    // Without a storage (tensorizer, safetensors) the data is C-contiguous at data_offset_bytes.
    std::optional<std::uint32_t> storage_index;
    std::uint64_t storage_offset = 0;   // elements of the tensor's dtype
    std::vector<std::uint64_t> strides; // elements, one per dimension (torch never writes negative ones)

    std::uint64_t numel() const noexcept;
    // "a.b" for a plain name, "model.layer.0.weight" for a path: for messages and filters.
    std::string display_name() const;
};

// A block of source bytes that tensors view (torch zip: one storage record, data/<key>).
struct StorageInfo {
    std::string key;                     // torch: the record's key ("0", "1", ...)
    DType dtype = DType::uint8;          // the element type it was saved with (sets byte swapping)
    std::uint64_t data_offset_bytes = 0; // in the source
    std::uint64_t byte_length = 0;
};

struct Index {
    // The registered format that read it (ringload/format.hpp); null only in an Index built by
    // hand. Decide by its properties (format->stores_hashes), print format_name().
    const Format* format = nullptr;
    std::uint32_t data_version = 0;
    std::uint64_t feature_flags = 0;
    bool encrypted = false;
    std::uint64_t source_size_bytes = 0;
    std::vector<TensorInfo> tensors;   // in file order
    std::vector<StorageInfo> storages; // torch zip; empty for the other formats
    bool big_endian = false;           // torch zip saved with byteorder 'big': storages swap on load
    // safetensors' __metadata__ (string to string), in the file's order.
    std::vector<std::pair<std::string, std::string>> metadata;

    std::uint64_t total_tensor_bytes() const noexcept;
    // "tensorizer", "safetensors" or "torch" (empty without a format).
    std::string_view format_name() const noexcept { return format != nullptr ? format->name : std::string_view(); }
};

// The path's components joined with "." (list indexes in decimal; no separator before the
// first non-empty text): "model.layers.0.weight".
std::string dotted_path(const std::vector<PathComponent>& path);

// numel * itemsize of `shape` in `dtype`, or nothing when it overflows 64 bits (a shape read
// from a file, or given by a caller, is checked before anything is sized by it).
std::optional<std::uint64_t> checked_byte_length(std::span<const std::uint64_t> shape, DType dtype) noexcept;

// A tensor for a writer: its name, type, and where its bytes are (host memory, C order,
// little-endian, numel * itemsize bytes). The caller keeps the bytes alive and unchanged until
// the write returns.
struct TensorToWrite {
    // A flat state dict key is one string ({"wte.weight"}); a nested state dict gives the path
    // of keys and list indexes ({"model", "layers", 0, "weight"}).
    std::vector<PathComponent> path;
    DType dtype = DType::float32;
    std::vector<std::uint64_t> shape; // empty for a 0-d tensor
    std::span<const std::byte> bytes; // ignored for a meta tensor
    bool is_meta = false;             // shape and dtype only: readers get zeros
    std::uint16_t module_index = 0;   // tensorizer extras, kept by round trips
    std::uint8_t tensor_type = 2;     // 0 parameter, 1 buffer, 2 state dict entry (nested names need 2)
    int device = -1;                  // -1: `bytes` are host memory; N: memory of CUDA device N
};

} // namespace ringload
