// formats/tensorizer/tensor_header.cpp
#include "formats/tensorizer/tensor_header.hpp"

#include "formats/tensorizer/dtype_string.hpp"
#include "ringload/engine/byte_reader.hpp"

#include <cstring>

namespace ringload::tensorizer {

Result<TensorHeader> parse_tensor_header(std::span<const std::byte> header_bytes, bool has_crypt_info) {
    ByteReader in(header_bytes);
    TensorHeader header;
    RL_TRY(header_size, in.u64());
    if (header_size != header_bytes.size()) {
        return fail(errc::format_error, "header size field says " + std::to_string(header_size) +
                                            " bytes but the index places the data " +
                                            std::to_string(header_bytes.size()) + " bytes after the header start");
    }
    RL_TRY(module_index, in.u16());
    header.module_index = module_index;
    RL_TRY(tensor_type, in.u8());
    header.tensor_type = tensor_type;
    RL_TRY(name_length, in.u16());
    RL_TRY(name, in.text(name_length));
    header.name = std::string(name);
    RL_TRY(dtype_length, in.u8());
    RL_TRY(dtype_text, in.text(dtype_length));
    header.dtype_text = std::string(dtype_text);
    RL_TRY(ndim, in.u8());
    for (std::uint8_t axis = 0; axis < ndim; ++axis) {
        RL_TRY(dim, in.u32());
        header.shape.push_back(dim);
    }
    RL_TRY(hash_section_length, in.u16());
    const std::size_t hash_section_start = in.position();
    if (hash_section_length > 0) {
        RL_TRY(hash_count, in.u8());
        for (std::uint8_t i = 0; i < hash_count; ++i) {
            RL_TRY(type, in.u8());
            RL_TRY(length, in.u8());
            StoredHash hash{type, in.position(), length};
            RL_TRY(value, in.bytes(length));
            (void)value;
            header.hashes.push_back(hash);
        }
    }
    if (in.position() != hash_section_start + hash_section_length) {
        return fail(errc::format_error,
                    "hash section length " + std::to_string(hash_section_length) + " does not match its records");
    }
    if (has_crypt_info) {
        header.crypt_offset_bytes = in.position();
        RL_TRY(block_length, in.u64());
        RL_TRY(block, in.bytes(block_length));
        (void)block;
        header.crypt_length_bytes = 8 + block_length;
    }
    // data_length is the last 8 bytes (§5.2): tolerate unknown bytes before it.
    if (in.remaining() < 8) {
        return fail(errc::format_error, "header ends before its data length field");
    }
    std::memcpy(&header.data_length, header_bytes.data() + header_bytes.size() - 8, 8);
    if (header.data_length < 0) {
        return fail(errc::unsupported, "negative data length (compressed tensors are not defined)");
    }
    return header;
}

Result<void> check_header_matches_index(const TensorHeader& header, const TensorInfo& tensor) {
    auto dtype = parse_dtype_string(header.dtype_text);
    const char* field = nullptr;
    if (header.name != tensor.name) {
        field = "name";
    } else if (header.tensor_type != tensor.tensor_type) {
        field = "tensor type";
    } else if (!dtype || dtype->dtype != tensor.dtype) {
        field = "dtype";
    } else if (header.shape != tensor.shape) {
        field = "shape";
    } else if (static_cast<std::uint64_t>(header.data_length) != tensor.data_length_bytes) {
        field = "data length";
    }
    if (field != nullptr) {
        return fail(errc::format_error, std::string("its header's ") + field + " disagrees with the index");
    }
    return {};
}

std::vector<std::byte> hash_input_prefix(std::span<const std::byte> header_bytes, const TensorHeader& header) {
    std::vector<std::byte> prefix(header_bytes.begin(), header_bytes.end());
    for (const auto& hash : header.hashes) {
        std::memset(prefix.data() + hash.value_offset_bytes, 0, hash.value_length_bytes);
    }
    if (header.crypt_length_bytes > 0) {
        auto begin = prefix.begin() + static_cast<std::ptrdiff_t>(header.crypt_offset_bytes);
        prefix.erase(begin, begin + static_cast<std::ptrdiff_t>(header.crypt_length_bytes));
    }
    return prefix;
}

} // namespace ringload::tensorizer
