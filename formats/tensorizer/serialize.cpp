// formats/tensorizer/serialize.cpp
#include "formats/tensorizer/serialize.hpp"

#include "formats/tensorizer/dtype_string.hpp"

#include <cstring>
#include <limits>

namespace ringload::tensorizer {
namespace {

constexpr std::uint8_t crc32_type = 0;
constexpr std::uint8_t sha256_type = 1;

class ByteWriter {
public:
    template <class T>
    void le(T value) {
        append(&value, sizeof(T)); // little-endian host (static_assert in byte_reader.hpp)
    }
    void append(const void* data, std::size_t length) {
        const auto* bytes = static_cast<const std::byte*>(data);
        out_.insert(out_.end(), bytes, bytes + length);
    }
    void text(const std::string& value) { append(value.data(), value.size()); }
    std::vector<std::byte> take() { return std::move(out_); }

private:
    std::vector<std::byte> out_;
};

bool encrypted_tensor(const RecordSpec& spec) {
    return spec.crypt && spec.crypt->encrypted();
}

// name, type, dtype, shape as the index has them: [name_len][name][type][dtype_len][dtype][ndim][dims]
void put_description(ByteWriter& out, const RecordSpec& spec, bool type_before_name) {
    if (type_before_name) {
        out.le<std::uint8_t>(spec.tensor_type);
    }
    out.le<std::uint16_t>(static_cast<std::uint16_t>(spec.name.size()));
    out.text(spec.name);
    if (!type_before_name) {
        out.le<std::uint8_t>(spec.tensor_type);
    }
    const std::string dtype = dtype_string(spec.dtype);
    out.le<std::uint8_t>(static_cast<std::uint8_t>(dtype.size()));
    out.text(dtype);
    out.le<std::uint8_t>(static_cast<std::uint8_t>(spec.shape.size()));
    for (auto dim : spec.shape) {
        out.le<std::uint32_t>(static_cast<std::uint32_t>(dim));
    }
}

// Everything before the crypt block: size placeholder, description, hash section.
void put_header_front(ByteWriter& out, const RecordSpec& spec, const StoredHashes& hashes) {
    out.le<std::uint64_t>(0); // header_size, patched by serialize_tensor_header
    out.le<std::uint16_t>(spec.module_index);
    put_description(out, spec, true);
    if (encrypted_tensor(spec)) {
        out.le<std::uint16_t>(1 + 2 + 32);
        out.le<std::uint8_t>(1);
    } else {
        out.le<std::uint16_t>(1 + (2 + 4) + (2 + 32));
        out.le<std::uint8_t>(2);
        out.le<std::uint8_t>(crc32_type);
        out.le<std::uint8_t>(4);
        out.le<std::uint32_t>(hashes.crc32);
    }
    out.le<std::uint8_t>(sha256_type);
    out.le<std::uint8_t>(32);
    out.append(hashes.sha256.data(), hashes.sha256.size());
}

} // namespace

Result<void> check_record_spec(const RecordSpec& spec) {
    if (spec.name.empty()) {
        return fail(errc::invalid_tensor_name, "an empty tensor name (no reader can load it)");
    }
    if (spec.name.size() > std::numeric_limits<std::uint16_t>::max()) {
        return fail(errc::invalid_tensor_name,
                    "a tensor name of " + std::to_string(spec.name.size()) + " bytes (the format allows 65535)");
    }
    if (spec.shape.size() > std::numeric_limits<std::uint8_t>::max()) {
        return fail(errc::invalid_argument,
                    "a tensor with " + std::to_string(spec.shape.size()) + " dimensions (the format allows 255)");
    }
    for (auto dim : spec.shape) {
        if (dim > std::numeric_limits<std::uint32_t>::max()) {
            return fail(errc::invalid_argument,
                        "a dimension of " + std::to_string(dim) + " (the format stores dimensions as u32)");
        }
    }
    return {};
}

std::size_t tensor_header_size(const RecordSpec& spec) {
    return serialize_tensor_header(spec, {}).size();
}

std::vector<std::byte> serialize_tensor_header(const RecordSpec& spec, const StoredHashes& hashes) {
    std::vector<std::byte> crypt;
    if (spec.crypt) {
        crypt = serialize_crypt_info(*spec.crypt);
    }
    ByteWriter out;
    put_header_front(out, spec, hashes);
    out.append(crypt.data(), crypt.size());
    out.le<std::int64_t>(static_cast<std::int64_t>(spec.data_length));
    // The size field comes first but counts the whole header (itself included): patched last.
    auto header = out.take();
    const std::uint64_t header_size = header.size();
    std::memcpy(header.data(), &header_size, sizeof header_size);
    return header;
}

std::vector<std::byte> hash_prefix_of(const RecordSpec& spec) {
    // Serialized with zero hash values, then the crypt block (just before data_length) cut
    // out; header_size keeps the real header's value.
    auto header = serialize_tensor_header(spec, {});
    if (spec.crypt) {
        const std::size_t crypt_bytes = serialize_crypt_info(*spec.crypt).size();
        const auto crypt_at = static_cast<long>(header.size() - 8 - crypt_bytes);
        header.erase(header.begin() + crypt_at, header.begin() + crypt_at + static_cast<long>(crypt_bytes));
    }
    return header;
}

std::size_t index_entry_size(const RecordSpec& spec) {
    return serialize_index_entry(spec, 0).size();
}

std::vector<std::byte> serialize_index_entry(const RecordSpec& spec, std::uint64_t header_offset) {
    ByteWriter out;
    put_description(out, spec, false);
    out.le<std::uint64_t>(header_offset);
    out.le<std::uint64_t>(header_offset + tensor_header_size(spec));
    out.le<std::uint64_t>(spec.data_length);
    return out.take();
}

std::vector<std::byte> serialize_file_header(const FileSummary& summary) {
    ByteWriter out;
    out.append("|TZR|", 5);
    out.le<std::uint32_t>(summary.data_version);
    std::byte flags[32] = {};
    if (summary.data_version >= 4) {
        std::memcpy(flags, &summary.feature_flags, 8); // a 256-bit little-endian integer
    }
    out.append(flags, sizeof flags);
    out.le<std::uint64_t>(summary.tensor_size_bytes);
    out.le<std::uint64_t>(0);
    out.le<std::uint64_t>(summary.tensor_count);
    out.le<std::uint64_t>(summary.index_bytes);
    return out.take();
}

FileSummary choose_data_version(bool encrypted, bool any_opaque_dtype, bool any_meta_tensor) {
    FileSummary summary;
    summary.data_version = encrypted ? 3 : 1;
    if (any_opaque_dtype) {
        summary.data_version = std::max<std::uint32_t>(summary.data_version, 2);
    }
    if (any_meta_tensor) {
        summary.data_version = 4;
    }
    summary.feature_flags = summary.data_version >= 4 && encrypted ? 1 : 0;
    return summary;
}

std::uint64_t index_bytes_for(std::uint64_t entries_bytes) {
    if (entries_bytes <= default_index_bytes) {
        return default_index_bytes;
    }
    return (entries_bytes + 4095) / 4096 * 4096;
}

} // namespace ringload::tensorizer
