// formats/torch/zip_directory.cpp
#include "formats/torch/zip_directory.hpp"

#include "formats/torch/little_endian.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace ringload::torch_zip {

namespace {

constexpr std::uint32_t local_signature = 0x04034B50;
constexpr std::uint32_t central_signature = 0x02014B50;
constexpr std::uint32_t end_signature = 0x06054B50;
constexpr std::uint32_t zip64_end_signature = 0x06064B50;
constexpr std::uint32_t zip64_locator_signature = 0x07064B50;
constexpr std::uint16_t zip64_extra_id = 0x0001;
constexpr std::size_t comment_bytes_max = 0xFFFF;

Error zip_error(std::string detail) {
    return fail(errc::format_error, "torch zip: " + std::move(detail));
}

std::string str(std::uint64_t value) {
    return std::to_string(value);
}

std::uint64_t round_up(std::uint64_t value, std::uint64_t alignment) noexcept {
    const std::uint64_t rest = value % alignment;
    return rest == 0 ? value : value + (alignment - rest);
}

bool needs_zip64(std::uint64_t header_offset, std::uint64_t length) noexcept {
    return header_offset >= zip_max32 || length >= zip_max32;
}

} // namespace

Result<ZipEnd> find_zip_end(std::span<const std::byte> tail, std::uint64_t source_size_bytes) {
    if (tail.size() < end_record_bytes) {
        return zip_error("not a zip file: " + str(source_size_bytes) + " bytes is shorter than the 22-byte end record");
    }
    const std::uint64_t tail_offset = source_size_bytes - tail.size();
    // Scan back over a possible comment for a signature whose comment length ends the file.
    const std::size_t last = tail.size() - end_record_bytes;
    const std::size_t first = last > comment_bytes_max ? last - comment_bytes_max : 0;
    std::optional<std::size_t> at;
    for (std::size_t pos = last + 1; pos-- > first;) {
        if (load_le32(tail, pos) == end_signature &&
            pos + end_record_bytes + load_le16(tail, pos + 20) == tail.size()) {
            at = pos;
            break;
        }
    }
    if (!at) {
        return zip_error("not a zip file: no end-of-central-directory record in the last " + str(tail.size()) +
                         " bytes");
    }
    const std::size_t pos = *at;
    ZipEnd end;
    end.end_record_offset_bytes = tail_offset + pos;
    if (load_le16(tail, pos + 4) != 0 || load_le16(tail, pos + 6) != 0) {
        return fail(errc::unsupported, "torch zip: multi-disk zip archives are not supported");
    }
    end.entry_count = load_le16(tail, pos + 10);
    end.directory_length_bytes = load_le32(tail, pos + 12);
    end.directory_offset_bytes = load_le32(tail, pos + 16);
    if (pos >= zip64_locator_bytes && load_le32(tail, pos - zip64_locator_bytes) == zip64_locator_signature) {
        const std::size_t locator = pos - zip64_locator_bytes;
        const std::uint64_t record = load_le64(tail, locator + 8);
        if (record + zip64_end_record_bytes > tail_offset + locator) {
            return zip_error("zip64 locator points at offset " + str(record) +
                             ", which does not leave room for the 56-byte zip64 end record before the locator");
        }
        end.zip64_record_offset_bytes = record;
    } else if (end.entry_count == 0xFFFF || end.directory_length_bytes == zip_max32 ||
               end.directory_offset_bytes == zip_max32) {
        return zip_error("end record has saturated fields but no zip64 locator precedes it");
    }
    if (!end.zip64_record_offset_bytes &&
        end.directory_offset_bytes + end.directory_length_bytes > end.end_record_offset_bytes) {
        return zip_error("central directory [" + str(end.directory_offset_bytes) + ", +" +
                         str(end.directory_length_bytes) + ") overlaps the end record at " +
                         str(end.end_record_offset_bytes));
    }
    return end;
}

Result<ZipEnd> apply_zip64_end_record(ZipEnd end, std::span<const std::byte> record) {
    if (record.size() < zip64_end_record_bytes || load_le32(record, 0) != zip64_end_signature) {
        return zip_error("no zip64 end record at offset " + str(end.zip64_record_offset_bytes.value_or(0)) +
                         " where the zip64 locator points");
    }
    if (load_le32(record, 16) != 0 || load_le32(record, 20) != 0) {
        return fail(errc::unsupported, "torch zip: multi-disk zip archives are not supported");
    }
    end.entry_count = load_le64(record, 32);
    end.directory_length_bytes = load_le64(record, 40);
    end.directory_offset_bytes = load_le64(record, 48);
    const std::uint64_t limit = *end.zip64_record_offset_bytes;
    if (end.directory_offset_bytes > limit || end.directory_length_bytes > limit - end.directory_offset_bytes) {
        return zip_error("central directory [" + str(end.directory_offset_bytes) + ", +" +
                         str(end.directory_length_bytes) + ") runs past the zip64 end record at " + str(limit));
    }
    return end;
}

namespace {

// A central header's 16/32-bit fields that are saturated continue in its zip64 extra field;
// reads them into `entry` and refuses a multi-disk archive.
Result<void> apply_zip64_extra(ZipEntry& entry, std::span<const std::byte> extra, std::uint16_t disk,
                               std::uint64_t record) {
    const auto where = [record] { return "central directory record " + str(record); };
    // Saturated fields continue in the zip64 extra, in this order (only those saturated).
    const bool want_length = entry.length_bytes == zip_max32;
    const bool want_compressed = entry.compressed_length_bytes == zip_max32;
    const bool want_offset = entry.header_offset_bytes == zip_max32;
    const bool want_disk = disk == 0xFFFF;
    bool found_zip64 = false;
    std::size_t at = 0;
    while (extra.size() - at >= 4) {
        const std::uint16_t id = load_le16(extra, at);
        const std::size_t length = load_le16(extra, at + 2);
        if (extra.size() - at - 4 < length) {
            return zip_error(where() + " ('" + std::string(entry.name) + "'): extra field runs past its end");
        }
        if (id == zip64_extra_id && !found_zip64) {
            found_zip64 = true;
            auto field = extra.subspan(at + 4, length);
            std::size_t next = 0;
            auto take = [&](std::uint64_t& value) -> bool {
                if (field.size() - next < 8) {
                    return false;
                }
                value = load_le64(field, next);
                next += 8;
                return true;
            };
            if ((want_length && !take(entry.length_bytes)) ||
                (want_compressed && !take(entry.compressed_length_bytes)) ||
                (want_offset && !take(entry.header_offset_bytes)) || (want_disk && field.size() - next < 4)) {
                return zip_error(where() + " ('" + std::string(entry.name) + "'): zip64 extra field is too short");
            }
        }
        at += 4 + length;
    }
    if (!found_zip64 && (want_length || want_compressed || want_offset)) {
        return zip_error(where() + " ('" + std::string(entry.name) +
                         "'): saturated size or offset without a zip64 extra field");
    }
    if (want_disk || disk != 0) {
        return fail(errc::unsupported, "torch zip: multi-disk zip archives are not supported");
    }
    return {};
}

} // namespace

Result<std::vector<ZipEntry>> parse_central_directory(std::span<const std::byte> directory, const ZipEnd& end) {
    if (end.entry_count == 0) {
        return zip_error("the zip archive has no records (torch.save writes at least data.pkl and version)");
    }
    if (end.entry_count > directory.size() / central_header_bytes) {
        return zip_error("end record claims " + str(end.entry_count) + " records but the central directory has " +
                         str(directory.size()) + " bytes (46 per record at least)");
    }
    std::vector<ZipEntry> entries;
    entries.reserve(static_cast<std::size_t>(end.entry_count));
    std::size_t pos = 0;
    for (std::uint64_t i = 0; i < end.entry_count; ++i) {
        // Spelled only for a message: a string per record was a tenth of reading the directory.
        const auto where = [i] { return "central directory record " + str(i); };
        if (directory.size() - pos < central_header_bytes || load_le32(directory, pos) != central_signature) {
            return zip_error(where() + " at offset " + str(end.directory_offset_bytes + pos) +
                             " has no central header signature");
        }
        ZipEntry entry;
        entry.flags = load_le16(directory, pos + 8);
        entry.method = load_le16(directory, pos + 10);
        entry.crc32 = load_le32(directory, pos + 16);
        entry.compressed_length_bytes = load_le32(directory, pos + 20);
        entry.length_bytes = load_le32(directory, pos + 24);
        const std::size_t name_bytes = load_le16(directory, pos + 28);
        const std::size_t extra_bytes = load_le16(directory, pos + 30);
        const std::size_t comment_bytes = load_le16(directory, pos + 32);
        const std::uint16_t disk = load_le16(directory, pos + 34);
        entry.header_offset_bytes = load_le32(directory, pos + 42);
        const std::size_t total = central_header_bytes + name_bytes + extra_bytes + comment_bytes;
        if (directory.size() - pos < total) {
            return zip_error(where() + " runs past the end of the central directory");
        }
        entry.name = {reinterpret_cast<const char*>(directory.data() + pos + central_header_bytes), name_bytes};
        auto extra = directory.subspan(pos + central_header_bytes + name_bytes, extra_bytes);
        RL_TRY_VOID(apply_zip64_extra(entry, extra, disk, i));
        if (entry.header_offset_bytes >= end.directory_offset_bytes ||
            end.directory_offset_bytes - entry.header_offset_bytes < local_header_bytes + name_bytes) {
            return zip_error("record '" + std::string(entry.name) + "': local header at " +
                             str(entry.header_offset_bytes) + " does not lie before the central directory at " +
                             str(end.directory_offset_bytes));
        }
        entries.push_back(std::move(entry));
        pos += total;
    }
    return entries;
}

Result<std::string> archive_prefix(const std::vector<ZipEntry>& entries) {
    if (entries.empty()) {
        return zip_error("the zip archive has no records");
    }
    const std::string first(entries.front().name);
    const auto slash = first.find('/');
    if (slash == std::string::npos || slash == 0) {
        return zip_error("record '" + first + "' is not inside an archive folder ('<prefix>/...')");
    }
    std::string prefix = first.substr(0, slash);
    for (const auto& entry : entries) {
        if (entry.name.size() <= prefix.size() + 1 || entry.name.compare(0, prefix.size(), prefix) != 0 ||
            entry.name[prefix.size()] != '/') {
            return zip_error("record '" + std::string(entry.name) + "' is outside the archive folder '" + prefix +
                             "/'");
        }
    }
    return prefix; // a name twice: found where the names are indexed (reader.cpp, index_archive)
}

std::uint64_t torch_data_offset(std::uint64_t header_offset_bytes, std::size_t name_bytes, std::uint64_t length_bytes,
                                std::uint64_t alignment_bytes) noexcept {
    std::uint64_t zip64_bytes = 0;
    if (needs_zip64(header_offset_bytes, length_bytes)) {
        zip64_bytes = 4 + (length_bytes >= zip_max32 ? 16 : 0) + (header_offset_bytes >= zip_max32 ? 8 : 0);
    }
    return round_up(header_offset_bytes + local_header_bytes + name_bytes + zip64_bytes + 4, alignment_bytes);
}

std::vector<std::size_t> entries_by_header_offset(const std::vector<ZipEntry>& entries) {
    std::vector<std::size_t> order(entries.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto before = [&](std::size_t a, std::size_t b) {
        return entries[a].header_offset_bytes < entries[b].header_offset_bytes;
    };
    // torch writes the directory in file order: strictly increasing offsets are already the
    // one order a sort could give (a million-entry sort was a twentieth of `ringload info`).
    const bool increasing = std::adjacent_find(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
                                return !before(a, b);
                            }) == order.end();
    if (!increasing) {
        std::sort(order.begin(), order.end(), before);
    }
    return order;
}

std::optional<std::vector<std::uint64_t>> torch_layout_data_offsets(const std::vector<ZipEntry>& entries,
                                                                    std::uint64_t directory_offset_bytes,
                                                                    std::uint64_t alignment_bytes) {
    const std::vector<std::size_t> order = entries_by_header_offset(entries);
    std::vector<std::uint64_t> offsets(entries.size());
    std::uint64_t next_header = 0;
    for (const std::size_t i : order) {
        const ZipEntry& entry = entries[i];
        if (entry.header_offset_bytes != next_header || entry.method != 0 ||
            entry.compressed_length_bytes != entry.length_bytes || entry.length_bytes > directory_offset_bytes) {
            return std::nullopt;
        }
        const std::uint64_t data =
            torch_data_offset(entry.header_offset_bytes, entry.name.size(), entry.length_bytes, alignment_bytes);
        if (data > directory_offset_bytes || entry.length_bytes > directory_offset_bytes - data) {
            return std::nullopt;
        }
        const std::uint64_t descriptor =
            entry.length_bytes == 0 ? 0 : (needs_zip64(entry.header_offset_bytes, entry.length_bytes) ? 24 : 16);
        offsets[i] = data;
        next_header = data + entry.length_bytes + descriptor;
    }
    if (next_header != directory_offset_bytes) {
        return std::nullopt;
    }
    return offsets;
}

Result<std::uint64_t> local_header_data_offset(std::span<const std::byte> bytes, const ZipEntry& entry) {
    const std::string where =
        "record '" + std::string(entry.name) + "': local header at " + str(entry.header_offset_bytes);
    if (bytes.size() < local_header_bytes || load_le32(bytes, 0) != local_signature) {
        return zip_error(where + " has no local header signature");
    }
    const std::uint16_t flags = load_le16(bytes, 6);
    const std::uint16_t method = load_le16(bytes, 8);
    const std::size_t name_bytes = load_le16(bytes, 26);
    const std::size_t extra_bytes = load_le16(bytes, 28);
    if ((flags & 1) != 0 || method != entry.method) {
        return zip_error(where + " disagrees with the central directory (flags " + str(flags) + ", method " +
                         str(method) + ")");
    }
    if (name_bytes != entry.name.size()) {
        return zip_error(where + " names a " + str(name_bytes) + "-byte record, the central directory a " +
                         str(entry.name.size()) + "-byte one");
    }
    if (bytes.size() >= local_header_bytes + name_bytes &&
        std::memcmp(bytes.data() + local_header_bytes, entry.name.data(), name_bytes) != 0) {
        return zip_error(where + " names another record");
    }
    return entry.header_offset_bytes + local_header_bytes + name_bytes + extra_bytes;
}

} // namespace ringload::torch_zip
