// formats/torch_writer/zip_writer_layout.cpp
#include "formats/torch_writer/zip_writer_layout.hpp"

#include <algorithm>

namespace ringload::torch_writer {
namespace {

constexpr std::uint64_t local_fixed_bytes = 30;
constexpr std::uint64_t central_fixed_bytes = 46;
constexpr std::uint64_t padding_field_bytes = 4; // 'F','B', u16 length
constexpr std::uint16_t flag_utf8 = 0x0800;
constexpr std::uint16_t flag_descriptor = 0x0008;

class Bytes {
public:
    explicit Bytes(std::vector<std::byte>& out) : out_(out) {}
    void u16(std::uint64_t value) { le(value, 2); }
    void u32(std::uint64_t value) { le(value, 4); }
    void u64(std::uint64_t value) { le(value, 8); }
    void text(const std::string& value) {
        for (char c : value) {
            out_.push_back(static_cast<std::byte>(c));
        }
    }
    void repeat(std::byte value, std::size_t count) { out_.insert(out_.end(), count, value); }

private:
    void le(std::uint64_t value, int bytes) {
        for (int i = 0; i < bytes; ++i) {
            out_.push_back(static_cast<std::byte>(value >> (8 * i)));
        }
    }
    std::vector<std::byte>& out_;
};

// The local zip64 extra's length (header included). miniz writes the size pair only for a
// large record, and the header offset (non-standard in a local header) for a far one.
std::uint64_t local_zip64_bytes(std::uint64_t size, std::uint64_t header_offset) {
    if (size < zip_max32 && header_offset < zip_max32) {
        return 0;
    }
    return 4 + (size >= zip_max32 ? 16 : 0) + (header_offset >= zip_max32 ? 8 : 0);
}

std::uint16_t flags_of(const ZipRecord& record) {
    return static_cast<std::uint16_t>(flag_utf8 | (record.size_bytes > 0 ? flag_descriptor : 0));
}

// The central zip64 extra: sizes (both real) if large, then the header offset if far.
void central_zip64(Bytes& out, const ZipRecord& record) {
    const bool large = record.size_bytes >= zip_max32;
    const bool far = record.header_offset >= zip_max32;
    out.u16(0x0001);
    out.u16((large ? 16 : 0) + (far ? 8 : 0));
    if (large) {
        out.u64(record.size_bytes);
        out.u64(record.size_bytes);
    }
    if (far) {
        out.u64(record.header_offset);
    }
}

std::uint64_t central_entry_bytes(const ZipRecord& record) {
    const bool large = record.size_bytes >= zip_max32;
    const bool far = record.header_offset >= zip_max32;
    return central_fixed_bytes + record.name.size() + (record.zip64() ? 4 + (large ? 16 : 0) + (far ? 8 : 0) : 0);
}

} // namespace

ZipLayout lay_out_zip(std::span<const ZipEntry> entries, std::uint64_t alignment_bytes) {
    ZipLayout layout;
    std::uint64_t position = 0;
    for (const auto& entry : entries) {
        ZipRecord record;
        record.name = entry.name;
        record.size_bytes = entry.size_bytes;
        record.header_offset = position;
        const std::uint64_t unpadded = position + local_fixed_bytes + entry.name.size() +
                                       local_zip64_bytes(entry.size_bytes, position) + padding_field_bytes;
        record.data_offset = (unpadded + alignment_bytes - 1) / alignment_bytes * alignment_bytes;
        position = record.end_offset();
        layout.central_bytes += central_entry_bytes(record);
        layout.records.push_back(std::move(record));
    }
    layout.central_offset = position;
    layout.length_bytes = position + layout.central_bytes + 56 + 20 + 22;
    return layout;
}

std::vector<std::byte> local_header_bytes(const ZipRecord& record) {
    std::vector<std::byte> bytes;
    bytes.reserve(record.header_bytes());
    Bytes out(bytes);
    const std::uint64_t zip64_bytes = local_zip64_bytes(record.size_bytes, record.header_offset);
    const std::uint64_t padding =
        record.header_bytes() - (local_fixed_bytes + record.name.size() + zip64_bytes + padding_field_bytes);
    out.u32(0x04034B50);
    out.u16(0); // version needed: miniz writes 0 for stored entries
    out.u16(flags_of(record));
    out.u16(0); // stored
    out.u16(0); // time
    out.u16(0); // date
    out.u32(0); // CRC, compressed and uncompressed size: in the descriptor
    out.u32(0);
    out.u32(0);
    out.u16(record.name.size());
    out.u16(zip64_bytes + padding_field_bytes + padding);
    out.text(record.name);
    if (zip64_bytes > 0) {
        out.u16(0x0001);
        out.u16(zip64_bytes - 4);
        if (record.size_bytes >= zip_max32) {
            out.u64(record.size_bytes);
            out.u64(0); // miniz writes the local header before compressing: compressed size 0
        }
        if (record.header_offset >= zip_max32) {
            out.u64(record.header_offset);
        }
    }
    out.u16(0x4246); // 'F','B'
    out.u16(padding);
    out.repeat(std::byte{'Z'}, padding);
    return bytes;
}

std::vector<std::byte> descriptor_bytes(const ZipRecord& record) {
    std::vector<std::byte> bytes;
    if (record.size_bytes == 0) {
        return bytes;
    }
    Bytes out(bytes);
    out.u32(0x08074B50);
    out.u32(record.crc32);
    if (record.zip64()) {
        out.u64(record.size_bytes);
        out.u64(record.size_bytes);
    } else {
        out.u32(record.size_bytes);
        out.u32(record.size_bytes);
    }
    return bytes;
}

std::vector<std::byte> central_bytes(const ZipLayout& layout) {
    std::vector<std::byte> bytes;
    bytes.reserve(layout.length_bytes - layout.central_offset);
    Bytes out(bytes);
    for (const auto& record : layout.records) {
        out.u32(0x02014B50);
        out.u16(0); // version made by
        out.u16(0); // version needed
        out.u16(flags_of(record));
        out.u16(0); // stored
        out.u16(0);
        out.u16(0);
        out.u32(record.crc32);
        out.u32(std::min(record.size_bytes, zip_max32));
        out.u32(std::min(record.size_bytes, zip_max32));
        out.u16(record.name.size());
        const std::uint64_t extra = central_entry_bytes(record) - central_fixed_bytes - record.name.size();
        out.u16(extra);
        out.u16(0); // comment
        out.u16(0); // disk
        out.u16(0); // internal attributes
        out.u32(0); // external attributes
        out.u32(std::min(record.header_offset, zip_max32));
        out.text(record.name);
        if (record.zip64()) {
            central_zip64(out, record);
        }
    }
    const std::uint64_t count = layout.records.size();
    const std::uint64_t zip64_end_offset = layout.central_offset + layout.central_bytes;
    out.u32(0x06064B50);
    out.u64(44);
    out.u16(0x031E);
    out.u16(0x002D);
    out.u32(0);
    out.u32(0);
    out.u64(count);
    out.u64(count);
    out.u64(layout.central_bytes);
    out.u64(layout.central_offset);
    out.u32(0x07064B50);
    out.u32(0);
    out.u64(zip64_end_offset);
    out.u32(1);
    out.u32(0x06054B50);
    out.u16(0);
    out.u16(0);
    out.u16(std::min<std::uint64_t>(count, 0xFFFF));
    out.u16(std::min<std::uint64_t>(count, 0xFFFF));
    out.u32(std::min(layout.central_bytes, zip_max32));
    out.u32(std::min(layout.central_offset, zip_max32));
    out.u16(0);
    return bytes;
}

} // namespace ringload::torch_writer
