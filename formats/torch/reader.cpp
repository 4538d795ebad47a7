// formats/torch/reader.cpp
#include "formats/torch/reader.hpp"

#include "formats/torch/format.hpp"
#include "formats/torch/pickle_machine.hpp"
#include "formats/torch/state_dict.hpp"
#include "formats/torch/zip_directory.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <deque>
#include <numeric>
#include <optional>
#include <unordered_map>

namespace ringload::torch_zip {

namespace {

constexpr std::uint64_t directory_bytes_max = std::uint64_t{1} << 30;
constexpr std::uint64_t small_record_bytes_max = 4096;
constexpr std::uint64_t storage_alignment_max = std::uint64_t{1} << 30;
constexpr std::size_t head_check_bytes = 512;

// The records torch.save writes right after data.pkl (§4); read together with it.
constexpr std::array<std::string_view, 3> small_records = {".format_version", ".storage_alignment", "byteorder"};

Error zip_error(std::string detail) {
    return fail(errc::format_error, "torch zip: " + std::move(detail));
}

std::string str(std::uint64_t value) {
    return std::to_string(value);
}

// Source bytes already read, by offset. Spans into it stay valid while it lives.
class HeldBytes {
public:
    std::optional<std::span<const std::byte>> find(std::uint64_t offset, std::uint64_t length) const {
        for (const auto& [start, bytes] : pieces_) {
            if (offset >= start && offset - start <= bytes.size() && length <= bytes.size() - (offset - start)) {
                return std::span<const std::byte>(bytes).subspan(static_cast<std::size_t>(offset - start),
                                                                 static_cast<std::size_t>(length));
            }
        }
        return std::nullopt;
    }

    std::span<const std::byte> add(std::uint64_t offset, std::vector<std::byte> bytes) {
        pieces_.emplace_back(offset, std::move(bytes));
        return pieces_.back().second;
    }

private:
    std::deque<std::pair<std::uint64_t, std::vector<std::byte>>> pieces_;
};

// The bytes [offset, offset + length): from what is held, else one read.
Task<Result<std::span<const std::byte>>> bytes_at(Source& source, HeldBytes& held, std::uint64_t offset,
                                                  std::uint64_t length) {
    if (auto found = held.find(offset, length)) {
        co_return *found;
    }
    if (offset > source.size_bytes() || length > source.size_bytes() - offset) {
        co_return fail(errc::truncated, "torch zip: bytes [" + str(offset) + ", +" + str(length) +
                                            ") lie past the end of the " + str(source.size_bytes()) + "-byte file");
    }
    std::vector<std::byte> bytes(static_cast<std::size_t>(length));
    std::span<std::byte> target(bytes);
    auto read = co_await read_exactly_at(source, offset, target);
    if (!read) {
        co_return read.error();
    }
    co_return held.add(offset, std::move(bytes));
}

struct Archive {
    ZipEnd end;
    std::vector<ZipEntry> entries;
    std::string prefix;
    std::unordered_map<std::string, std::size_t> by_name; // full name -> entries index
    std::vector<std::uint64_t> next_header;               // per entry: next local header or directory

    const ZipEntry* find(std::string_view record) const {
        auto found = by_name.find(prefix + "/" + std::string(record));
        return found == by_name.end() ? nullptr : &entries[found->second];
    }
    std::size_t index_of(const ZipEntry* entry) const { return static_cast<std::size_t>(entry - entries.data()); }
};

Result<void> index_archive(Archive& archive) {
    RL_TRY(prefix, archive_prefix(archive.entries));
    archive.prefix = std::move(prefix);
    for (std::size_t i = 0; i < archive.entries.size(); ++i) {
        archive.by_name.emplace(archive.entries[i].name, i);
    }
    std::vector<std::size_t> order(archive.entries.size());
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return archive.entries[a].header_offset_bytes < archive.entries[b].header_offset_bytes;
    });
    archive.next_header.assign(archive.entries.size(), archive.end.directory_offset_bytes);
    for (std::size_t i = 0; i + 1 < order.size(); ++i) {
        archive.next_header[order[i]] = archive.entries[order[i + 1]].header_offset_bytes;
    }
    if (archive.find("constants.pkl") != nullptr) {
        return fail(errc::unsupported,
                    "torch zip: a TorchScript archive (torch.jit.save; it has constants.pkl), not "
                    "a torch.save checkpoint: load it with torch.jit.load and re-save its "
                    "state_dict()");
    }
    if (archive.find("data.pkl") == nullptr) {
        return zip_error("no record '" + archive.prefix + "/data.pkl' (not a torch.save checkpoint)");
    }
    if (archive.find("version") == nullptr && archive.find(".data/version") == nullptr) {
        return zip_error("no record '" + archive.prefix + "/version' (torch.load requires it)");
    }
    return {};
}

Result<void> check_stored(const ZipEntry& entry) {
    if ((entry.flags & 1) != 0) {
        return fail(errc::unsupported, "torch zip: record '" + entry.name + "' is encrypted (zip encryption)");
    }
    if (entry.method != 0 || entry.compressed_length_bytes != entry.length_bytes) {
        return fail(errc::unsupported, "torch zip: record '" + entry.name + "' is compressed (method " +
                                           str(entry.method) +
                                           "); torch.save stores records uncompressed: re-save it with torch.save");
    }
    return {};
}

// The record's data, given its local header lies in `region` (which starts at region_offset and
// ends before the next local header).
Result<std::pair<std::uint64_t, std::span<const std::byte>>> record_in(std::span<const std::byte> region,
                                                                       std::uint64_t region_offset,
                                                                       const ZipEntry& entry) {
    RL_TRY_VOID(check_stored(entry));
    const std::uint64_t at = entry.header_offset_bytes - region_offset;
    RL_TRY(data_offset, local_header_data_offset(region.subspan(static_cast<std::size_t>(at)), entry));
    const std::uint64_t data_at = data_offset - region_offset;
    if (data_at > region.size() || entry.length_bytes > region.size() - data_at) {
        return zip_error("record '" + entry.name + "': data [" + str(data_offset) + ", +" + str(entry.length_bytes) +
                         ") runs into the next record");
    }
    return std::pair{data_offset,
                     region.subspan(static_cast<std::size_t>(data_at), static_cast<std::size_t>(entry.length_bytes))};
}

Result<std::uint64_t> parse_decimal(std::span<const std::byte> bytes, const std::string& record) {
    std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
        text.remove_suffix(1);
    }
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
        return zip_error("record '" + record + "' should hold a decimal number, not '" +
                         std::string(text.substr(0, 40)) + "'");
    }
    return value;
}

Error legacy_error() {
    return fail(errc::unsupported,
                "legacy torch format (pre-1.6, not a zip): re-save it with a newer torch "
                "(torch.save defaults to zip since 1.6)");
}

Task<Result<Index>> read_index_inner(Source& source, ReadIndexOptions options, HeldBytes& held) {
    const std::uint64_t size = source.size_bytes();

    // Read 1: the tail, with the end records and usually the central directory.
    const std::uint64_t tail_bytes = std::min<std::uint64_t>(size, std::max<std::size_t>(options.tail_read_bytes, 128));
    auto tail = co_await bytes_at(source, held, size - tail_bytes, tail_bytes);
    if (!tail) {
        co_return tail.error();
    }
    Archive archive;
    {
        auto end = find_zip_end(*tail, size);
        if (!end) {
            co_return end.error();
        }
        archive.end = *end;
    }
    if (archive.end.zip64_record_offset_bytes) {
        auto record = co_await bytes_at(source, held, *archive.end.zip64_record_offset_bytes, zip64_end_record_bytes);
        if (!record) {
            co_return record.error();
        }
        auto end = apply_zip64_end_record(archive.end, *record);
        if (!end) {
            co_return end.error();
        }
        archive.end = *end;
    }
    if (archive.end.directory_length_bytes > directory_bytes_max) {
        co_return zip_error("central directory of " + str(archive.end.directory_length_bytes) + " bytes (limit " +
                            str(directory_bytes_max) + ")");
    }

    // Read 2, if the tail did not hold it: the central directory.
    auto directory =
        co_await bytes_at(source, held, archive.end.directory_offset_bytes, archive.end.directory_length_bytes);
    if (!directory) {
        co_return directory.error();
    }
    {
        auto entries = parse_central_directory(*directory, archive.end);
        if (!entries) {
            co_return entries.error();
        }
        archive.entries = std::move(*entries);
        auto indexed = index_archive(archive);
        if (!indexed) {
            co_return indexed.error();
        }
    }

    // Read 3, if not held: data.pkl and the small records torch writes right after it.
    const ZipEntry& pickle_entry = *archive.find("data.pkl");
    {
        auto stored = check_stored(pickle_entry);
        if (!stored) {
            co_return stored.error();
        }
    }
    const std::uint64_t region_start = pickle_entry.header_offset_bytes;
    std::uint64_t region_end = archive.next_header[archive.index_of(&pickle_entry)];
    std::vector<const ZipEntry*> in_region = {&pickle_entry};
    for (bool grew = true; grew;) {
        grew = false;
        for (const auto record : small_records) {
            const ZipEntry* entry = archive.find(record);
            // Only strictly forward: two records claiming one header offset must not loop here.
            if (entry != nullptr && entry->header_offset_bytes == region_end &&
                archive.next_header[archive.index_of(entry)] > region_end &&
                entry->length_bytes <= small_record_bytes_max) {
                region_end = archive.next_header[archive.index_of(entry)];
                in_region.push_back(entry);
                grew = true;
            }
        }
    }
    const PickleLimits pickle_limits;
    if (pickle_entry.length_bytes > pickle_limits.pickle_bytes_max ||
        region_end - region_start > pickle_limits.pickle_bytes_max + (std::uint64_t{1} << 20)) {
        co_return zip_error("data.pkl of " + str(pickle_entry.length_bytes) + " bytes (region of " +
                            str(region_end - region_start) + ") is larger than the " +
                            str(pickle_limits.pickle_bytes_max) + "-byte limit");
    }
    auto region = co_await bytes_at(source, held, region_start, region_end - region_start);
    if (!region) {
        co_return region.error();
    }
    std::unordered_map<std::size_t, std::uint64_t> known_offsets; // entry index -> data offset (local header)
    std::unordered_map<std::string_view, std::span<const std::byte>> small_data;
    std::span<const std::byte> pickle;
    for (const ZipEntry* entry : in_region) {
        auto record = record_in(*region, region_start, *entry);
        if (!record) {
            co_return record.error();
        }
        known_offsets[archive.index_of(entry)] = record->first;
        if (entry == &pickle_entry) {
            pickle = record->second;
        } else {
            small_data[std::string_view(entry->name).substr(archive.prefix.size() + 1)] = record->second;
        }
    }
    // Small records elsewhere (not torch's order): one read each.
    for (const auto record : small_records) {
        const ZipEntry* entry = archive.find(record);
        if (entry == nullptr || small_data.contains(record)) {
            continue;
        }
        if (entry->length_bytes > small_record_bytes_max) {
            co_return zip_error("record '" + entry->name + "' has " + str(entry->length_bytes) + " bytes (at most " +
                                str(small_record_bytes_max) + " expected)");
        }
        // Header, name, extra (each at most 64 KiB) and the data; not a hostile gap after it.
        const std::uint64_t next = std::min<std::uint64_t>(
            archive.next_header[archive.index_of(entry)],
            entry->header_offset_bytes + local_header_bytes + 2 * 0xFFFF + small_record_bytes_max);
        auto span = co_await bytes_at(source, held, entry->header_offset_bytes, next - entry->header_offset_bytes);
        if (!span) {
            co_return span.error();
        }
        auto found = record_in(*span, entry->header_offset_bytes, *entry);
        if (!found) {
            co_return found.error();
        }
        known_offsets[archive.index_of(entry)] = found->first;
        small_data[record] = found->second;
    }

    Index index;
    index.format = &format;
    index.source_size_bytes = size;
    if (auto order = small_data.find("byteorder"); order != small_data.end()) {
        std::string_view text(reinterpret_cast<const char*>(order->second.data()), order->second.size());
        if (text == "big") {
            index.big_endian = true;
        } else if (text != "little") {
            co_return zip_error("record 'byteorder' says '" + std::string(text.substr(0, 40)) +
                                "' (only 'little' or 'big' are valid)");
        }
    }
    std::uint64_t alignment = storage_alignment_default;
    if (auto found = small_data.find(".storage_alignment"); found != small_data.end()) {
        auto parsed = parse_decimal(found->second, ".storage_alignment");
        if (!parsed) {
            co_return parsed.error();
        }
        if (*parsed == 0 || *parsed > storage_alignment_max) {
            co_return zip_error("record '.storage_alignment' says " + str(*parsed) + " (expected 1.." +
                                str(storage_alignment_max) + ")");
        }
        alignment = *parsed;
    }

    // §6.3: every record's data offset from the central directory, trusted only if the records are
    // packed as torch packs them and every local header already held agrees.
    auto computed = torch_layout_data_offsets(archive.entries, archive.end.directory_offset_bytes, alignment);
    for (std::size_t i = 0; i < archive.entries.size(); ++i) {
        const ZipEntry& entry = archive.entries[i];
        if (known_offsets.contains(i)) {
            continue;
        }
        if (auto header = held.find(entry.header_offset_bytes, local_header_bytes + entry.name.size())) {
            auto offset = local_header_data_offset(*header, entry);
            if (!offset) {
                co_return offset.error();
            }
            known_offsets[i] = *offset;
        }
    }
    for (const auto& [i, offset] : known_offsets) {
        if (computed && (*computed)[i] != offset) {
            computed.reset();
        }
    }
    auto data_offset_of = [&](std::size_t i) -> std::optional<std::uint64_t> {
        if (auto found = known_offsets.find(i); found != known_offsets.end()) {
            return found->second;
        }
        if (computed) {
            return (*computed)[i];
        }
        return std::nullopt;
    };

    // The version record, when its bytes are already held (it is usually last, in the tail).
    const ZipEntry* version = archive.find("version");
    if (version == nullptr) {
        version = archive.find(".data/version");
    }
    if (auto offset = data_offset_of(archive.index_of(version)); offset && version->length_bytes <= 64) {
        if (auto bytes = held.find(*offset, version->length_bytes)) {
            auto parsed = parse_decimal(*bytes, version->name);
            if (!parsed) {
                co_return parsed.error();
            }
        }
    }

    // The pickle: a value tree, then tensors and storages.
    auto tree = unpickle_weights_only(pickle, pickle_limits);
    if (!tree) {
        co_return tree.error();
    }
    const StorageRecordLength record_length = [&archive](const std::string& key) -> Result<std::uint64_t> {
        const ZipEntry* entry = archive.find("data/" + key);
        if (entry == nullptr) {
            return zip_error("storage '" + key + "': record '" + archive.prefix + "/data/" + key +
                             "' is missing from the archive");
        }
        RL_TRY_VOID(check_stored(*entry));
        return entry->length_bytes;
    };
    {
        auto collected = collect_tensors(*tree->root, record_length, index);
        if (!collected) {
            co_return collected.error();
        }
    }

    // Each storage's data offset: computed, or (a zip packed otherwise) from its local header.
    for (auto& storage : index.storages) {
        const ZipEntry* entry = archive.find("data/" + storage.key);
        const std::size_t i = archive.index_of(entry);
        std::optional<std::uint64_t> offset = data_offset_of(i);
        if (!offset) {
            auto header =
                co_await bytes_at(source, held, entry->header_offset_bytes, local_header_bytes + entry->name.size());
            if (!header) {
                co_return header.error();
            }
            auto parsed = local_header_data_offset(*header, *entry);
            if (!parsed) {
                co_return parsed.error();
            }
            offset = *parsed;
            known_offsets[i] = *parsed;
        }
        const std::uint64_t limit = archive.next_header[i];
        if (*offset > limit || entry->length_bytes > limit - *offset) {
            co_return zip_error("record '" + entry->name + "': data [" + str(*offset) + ", +" +
                                str(entry->length_bytes) + ") runs into the next record at " + str(limit));
        }
        storage.data_offset_bytes = *offset;
    }
    for (auto& tensor : index.tensors) {
        const std::uint64_t base = index.storages[*tensor.storage_index].data_offset_bytes;
        tensor.data_offset_bytes += base;
        tensor.record_offset_bytes += base;
    }
    co_return index;
}

} // namespace

bool has_torch_zip_magic(std::span<const std::byte> first_bytes) noexcept {
    return first_bytes.size() >= 4 && std::memcmp(first_bytes.data(), "PK\x03\x04", 4) == 0;
}

bool has_legacy_torch_magic(std::span<const std::byte> first_bytes) noexcept {
    // A pickle stream: PROTO 0x80 and a protocol number (2 with the LONG1 magic for torch < 1.6).
    if (first_bytes.size() >= 2 && first_bytes[0] == std::byte{0x80} && first_bytes[1] <= std::byte{5}) {
        return true;
    }
    // The tar format of torch <= 0.3.
    return first_bytes.size() >= 262 && std::memcmp(first_bytes.data() + 257, "ustar", 5) == 0;
}

Task<Result<Index>> read_index(Source& source) {
    const ReadIndexOptions options;
    auto read = read_index(source, options);
    auto index = co_await std::move(read);
    co_return index;
}

Task<Result<Index>> read_index(Source& source, ReadIndexOptions options) {
    HeldBytes held;
    auto read = read_index_inner(source, options, held);
    auto index = co_await std::move(read);
    if (index) {
        co_return index;
    }
    Error error = index.error();
    // A file that is not a zip: say which old format it is (one more small read at most).
    if (error.code == errc::format_error || error.code == errc::truncated) {
        const std::uint64_t head_bytes = std::min<std::uint64_t>(source.size_bytes(), head_check_bytes);
        auto head = co_await bytes_at(source, held, 0, head_bytes);
        if (head && !has_torch_zip_magic(*head)) {
            if (has_legacy_torch_magic(*head)) {
                co_return with_context(legacy_error(), source.name());
            }
            if (head->size() >= 8 && std::memcmp(head->data(), "PYTORCH1", 8) == 0) {
                co_return with_context(fail(errc::unsupported,
                                            "torch zip: a 2018 TorchScript preview container "
                                            "(PYTORCH1), not a torch.save checkpoint"),
                                       source.name());
            }
        }
    }
    co_return with_context(std::move(error), source.name());
}

} // namespace ringload::torch_zip
