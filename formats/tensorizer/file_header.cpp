// formats/tensorizer/file_header.cpp
#include "formats/tensorizer/file_header.hpp"

#include "formats/tensorizer/dtype_string.hpp"
#include "formats/tensorizer/format.hpp"
#include "formats/tensorizer/tensor_name.hpp"
#include "ringload/engine/byte_reader.hpp"

#include <cstring>

namespace ringload::tensorizer {
namespace {

constexpr std::string_view magic = "|TZR|";
constexpr std::size_t feature_flags_bytes = 32;
// Smallest possible per-tensor header: sizes of every fixed field with empty strings and no hashes.
constexpr std::uint64_t tensor_header_bytes_min = 8 + 2 + 1 + 2 + 1 + 1 + 2 + 8;

Result<std::uint64_t> checked_numel_bytes(const std::vector<std::uint64_t>& shape, std::size_t item_bytes) {
    std::uint64_t total = item_bytes;
    for (std::uint64_t dim : shape) {
        if (dim != 0 && total > UINT64_MAX / dim) {
            return fail(errc::format_error, "shape is too large");
        }
        total *= dim;
    }
    return total;
}

std::string quoted(const TensorInfo& tensor) {
    return "tensor '" + tensor.display_name() + "'";
}

Result<TensorInfo> parse_index_entry(ByteReader& in) {
    TensorInfo tensor;
    RL_TRY(name_length, in.u16());
    RL_TRY(name, in.text(name_length));
    tensor.name = std::string(name);
    RL_TRY(tensor_type, in.u8());
    tensor.tensor_type = tensor_type;
    RL_TRY(dtype_length, in.u8());
    RL_TRY(dtype_text, in.text(dtype_length));
    RL_TRY(ndim, in.u8());
    for (std::uint8_t axis = 0; axis < ndim; ++axis) {
        RL_TRY(dim, in.u32());
        tensor.shape.push_back(dim);
    }
    RL_TRY(header_offset, in.u64());
    RL_TRY(data_offset, in.u64());
    RL_TRY(data_length, in.u64());
    tensor.record_offset_bytes = header_offset;
    tensor.data_offset_bytes = data_offset;
    tensor.data_length_bytes = data_length;

    RL_TRY(path, parse_tensor_name(tensor.name));
    tensor.path = std::move(path);
    auto dtype = parse_dtype_string(dtype_text);
    if (!dtype) {
        return fail(dtype.error().code, quoted(tensor) + ": " + dtype.error().detail);
    }
    tensor.dtype = dtype->dtype;
    auto bytes = checked_numel_bytes(tensor.shape, itemsize(tensor.dtype));
    if (!bytes) {
        return fail(errc::format_error, quoted(tensor) + ": " + bytes.error().detail);
    }
    tensor.byte_length = *bytes;
    // data_length 0 with elements is a meta tensor (§8): it loads as zeros.
    tensor.is_meta = data_length == 0 && tensor.byte_length != 0;
    if (!tensor.is_meta && data_length != tensor.byte_length) {
        return fail(errc::format_error, quoted(tensor) + ": stores " + std::to_string(data_length) +
                                            " bytes but its shape and dtype need " +
                                            std::to_string(tensor.byte_length));
    }
    return tensor;
}

} // namespace

Result<FileHeader> parse_file_header(std::span<const std::byte> bytes, std::uint64_t file_size_bytes) {
    if (bytes.size() >= magic.size() && std::memcmp(bytes.data(), magic.data(), magic.size()) != 0) {
        return fail(errc::not_tensorizer, "bad magic (expected |TZR| at offset 0)");
    }
    if (bytes.size() < magic.size()) {
        return fail(errc::truncated,
                    "the file has " + std::to_string(file_size_bytes) + " bytes, too few for the tensorizer magic");
    }
    ByteReader in(bytes.subspan(magic.size()));
    FileHeader header;
    auto version = in.u32();
    if (!version) {
        return fail(errc::truncated, "the file ends inside the data version field (offset 5)");
    }
    header.data_version = *version;
    if (header.data_version < data_version_min || header.data_version > data_version_max) {
        return fail(errc::unsupported_version,
                    "data version " + std::to_string(header.data_version) + " (ringload reads versions 1 to 4)");
    }
    if (bytes.size() < file_header_bytes) {
        return fail(errc::truncated, "the file has " + std::to_string(file_size_bytes) +
                                         " bytes and ends inside the 73-byte file header");
    }
    RL_TRY(flags, in.bytes(feature_flags_bytes));
    std::memcpy(&header.feature_flags, flags.data(), sizeof(header.feature_flags));
    bool high_flags = false;
    for (std::size_t i = sizeof(header.feature_flags); i < feature_flags_bytes; ++i) {
        high_flags |= flags[i] != std::byte{0};
    }
    if (high_flags || header.feature_flags > 1) {
        return fail(errc::unsupported, "unsupported feature flags (only bit 0, encryption, is defined)");
    }
    RL_TRY(tensor_size, in.u64());
    header.tensor_size_bytes = tensor_size;
    RL_TRY(unused, in.u64());
    (void)unused; // never written by any version (§3)
    RL_TRY(count, in.u64());
    header.tensor_count = count;
    RL_TRY(index_bytes, in.u64());
    header.index_bytes = index_bytes;
    if (header.tensor_count == 0) {
        return fail(errc::empty_index, "the file holds no tensors (tensor count is 0)");
    }
    if (header.index_bytes > index_bytes_max) {
        return fail(errc::format_error, "index length " + std::to_string(header.index_bytes) + " is implausible");
    }
    if (file_header_bytes + header.index_bytes > file_size_bytes) {
        return fail(errc::truncated, "the index needs bytes up to offset " +
                                         std::to_string(file_header_bytes + header.index_bytes) +
                                         " but the file ends at " + std::to_string(file_size_bytes));
    }
    return header;
}

Result<Index> parse_index(const FileHeader& header, std::span<const std::byte> index_bytes,
                          std::uint64_t file_size_bytes) {
    Index index;
    index.format = &format;
    index.data_version = header.data_version;
    index.feature_flags = header.feature_flags;
    index.encrypted = header.has_crypt_info();
    index.source_size_bytes = file_size_bytes;

    ByteReader in(index_bytes);
    std::uint64_t previous_end = file_header_bytes + header.index_bytes;
    // Each entry takes at least 29 bytes: a count beyond that cannot fit the index.
    if (header.tensor_count > index_bytes.size() / 29 + 1) {
        return fail(errc::format_error, "tensor count " + std::to_string(header.tensor_count) +
                                            " cannot fit an index of " + std::to_string(index_bytes.size()) + " bytes");
    }
    index.tensors.reserve(header.tensor_count);
    for (std::uint64_t i = 0; i < header.tensor_count; ++i) {
        const std::size_t entry_offset = in.position();
        auto entry = parse_index_entry(in);
        if (!entry) {
            return fail(entry.error().code, "index entry " + std::to_string(i) + " at offset " +
                                                std::to_string(file_header_bytes + entry_offset) + ": " +
                                                entry.error().detail);
        }
        TensorInfo& tensor = *entry;
        if (tensor.record_offset_bytes < previous_end ||
            tensor.data_offset_bytes < tensor.record_offset_bytes + tensor_header_bytes_min ||
            tensor.data_offset_bytes - tensor.record_offset_bytes > (1u << 30)) {
            return fail(errc::format_error, quoted(tensor) + ": record at offset " +
                                                std::to_string(tensor.record_offset_bytes) +
                                                " overlaps the previous record or has an impossible header size");
        }
        std::uint64_t end = tensor.data_offset_bytes + tensor.data_length_bytes;
        if (end < tensor.data_offset_bytes || end > file_size_bytes) {
            return fail(errc::truncated, quoted(tensor) + " needs bytes up to offset " + std::to_string(end) +
                                             " but the file ends at " + std::to_string(file_size_bytes));
        }
        previous_end = end;
        index.tensors.push_back(std::move(tensor));
    }
    RL_TRY_VOID(check_name_tree(index.tensors));
    return index;
}

} // namespace ringload::tensorizer
