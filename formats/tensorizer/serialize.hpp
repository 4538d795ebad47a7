// formats/tensorizer/serialize.hpp
//
// The bytes a tensorizer writer puts down, field for field as tensorizer 2.11.1 does
// (tensorizer-format.md §3, §4, §5.1, §7, §9.2): the file header, index entries and per-tensor
// headers. Pure functions; the write pipeline decides where they go.
//
//  record:  [ header_size | module_idx | type | name | dtype | shape | hashes | crypt? | data_length ][ data ]
//
// A header's size does not depend on its hash values or MACs, so a writer can lay out the
// whole file first, write the data, and write each header last, once its hashes are known.
#pragma once

#include "formats/tensorizer/crypt_info.hpp"
#include "ringload/dtype.hpp"
#include "ringload/engine/hashes.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace ringload::tensorizer {

inline constexpr std::uint64_t default_index_bytes = 256 << 10; // what tensorizer always reserves

struct RecordSpec {
    std::string name; // the stored name field (plain UTF-8, or 0x1E + JSON, see tensor_name.hpp)
    DType dtype = DType::float32;
    std::vector<std::uint64_t> shape;
    std::uint16_t module_index = 0;
    std::uint8_t tensor_type = 0;  // 0 PARAM, 1 BUFFER, 2 STATE_DICT
    std::uint64_t data_length = 0; // 0 for meta tensors
    // Present exactly when the file carries crypt info (v3, v4 + flag); an empty CryptInfo for
    // a meta tensor in an encrypted file. An encrypted tensor stores SHA-256 only (§5.1).
    std::optional<CryptInfo> crypt;
};

struct StoredHashes {
    std::uint32_t crc32 = 0;
    Sha256Digest sha256{};
};

// Checks the format's limits (name <= 65535 bytes, ndim <= 255, dims < 2^32) so that a
// writer refuses a tensor before writing anything.
Result<void> check_record_spec(const RecordSpec& spec);

std::size_t tensor_header_size(const RecordSpec& spec);
// With zero hash values: H' plus the crypt block, i.e. the header before its hashes are known.
std::vector<std::byte> serialize_tensor_header(const RecordSpec& spec, const StoredHashes& hashes);
// The bytes the stored hashes cover before the data (H', §6): the header with zeroed hash
// values and without the crypt block.
std::vector<std::byte> hash_prefix_of(const RecordSpec& spec);

std::size_t index_entry_size(const RecordSpec& spec);
std::vector<std::byte> serialize_index_entry(const RecordSpec& spec, std::uint64_t header_offset);

struct FileSummary {
    std::uint32_t data_version = 1;
    std::uint64_t feature_flags = 0;
    std::uint64_t tensor_size_bytes = 0; // Σ data_length
    std::uint64_t tensor_count = 0;
    std::uint64_t index_bytes = default_index_bytes;
};
std::vector<std::byte> serialize_file_header(const FileSummary& summary);

// §7: the lowest version that can represent the content; flag bit 0 only at version 4.
FileSummary choose_data_version(bool encrypted, bool any_opaque_dtype, bool any_meta_tensor);

// The index size for these entries: tensorizer's 256 KiB when they fit (so that output is
// byte-identical to tensorizer's), else just enough, in whole 4 KiB pages. tensorizer's own
// reader honours index_len, so it still reads files with more than ~3,300 tensors.
std::uint64_t index_bytes_for(std::uint64_t entries_bytes);

} // namespace ringload::tensorizer
