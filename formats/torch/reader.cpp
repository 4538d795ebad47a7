// formats/torch/reader.cpp
#include "formats/torch/reader.hpp"

#include "formats/torch/format.hpp"
#include "formats/torch/name_table.hpp"
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
    RL_CO_TRY_VOID(co_await read_exactly_at(source, offset, target));
    co_return held.add(offset, std::move(bytes));
}

struct Archive {
    ZipEnd end;
    std::vector<ZipEntry> entries; // their names view the directory's bytes, which `held` keeps
    std::string prefix;
    NameTable by_name{"data/"};             // name after "<prefix>/" (in entries) -> entries index
    std::vector<std::uint64_t> next_header; // per entry: next local header or directory

    const ZipEntry* find(std::string_view record) const {
        const std::size_t found = by_name.find(record);
        return found == NameTable::none ? nullptr : &entries[found];
    }
    std::size_t index_of(const ZipEntry* entry) const { return static_cast<std::size_t>(entry - entries.data()); }

    // The record data/<key> of a storage; its name spelled on the stack (once per tensor).
    const ZipEntry* find_storage(std::string_view key) const {
        constexpr std::string_view head = "data/";
        std::array<char, 64> spelled;
        if (key.size() > spelled.size() - head.size()) {
            return find(std::string(head) + std::string(key));
        }
        std::copy(head.begin(), head.end(), spelled.begin());
        std::copy(key.begin(), key.end(), spelled.begin() + head.size());
        return find(std::string_view(spelled.data(), head.size() + key.size()));
    }
};

Result<void> index_archive(Archive& archive) {
    RL_TRY(prefix, archive_prefix(archive.entries));
    archive.prefix = std::move(prefix);
    archive.by_name.reserve(archive.entries.size());
    for (std::size_t i = 0; i < archive.entries.size(); ++i) {
        // archive_prefix checked that every name starts with "<prefix>/".
        const std::string_view name = archive.entries[i].name;
        if (!archive.by_name.insert(name.substr(archive.prefix.size() + 1), i)) {
            return zip_error("record '" + std::string(name) + "' appears twice in the central directory");
        }
    }
    const std::vector<std::size_t> order = entries_by_header_offset(archive.entries);
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
        return fail(errc::unsupported,
                    "torch zip: record '" + std::string(entry.name) + "' is encrypted (zip encryption)");
    }
    if (entry.method != 0 || entry.compressed_length_bytes != entry.length_bytes) {
        return fail(errc::unsupported, "torch zip: record '" + std::string(entry.name) + "' is compressed (method " +
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
        return zip_error("record '" + std::string(entry.name) + "': data [" + str(data_offset) + ", +" +
                         str(entry.length_bytes) + ") runs into the next record");
    }
    return std::pair{data_offset,
                     region.subspan(static_cast<std::size_t>(data_at), static_cast<std::size_t>(entry.length_bytes))};
}

Result<std::uint64_t> parse_decimal(std::span<const std::byte> bytes, std::string_view record) {
    std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
        text.remove_suffix(1);
    }
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) {
        return zip_error("record '" + std::string(record) + "' should hold a decimal number, not '" +
                         std::string(text.substr(0, 40)) + "'");
    }
    return value;
}

// Reads 1 and 2: the tail (end records, usually the central directory too) and, if the tail did
// not hold it, the central directory; then the entries indexed by name and by position.
Task<Result<Archive>> read_archive(Source& source, ReadIndexOptions options, HeldBytes& held) {
    const std::uint64_t size = source.size_bytes();
    const std::uint64_t tail_bytes = std::min<std::uint64_t>(size, std::max<std::size_t>(options.tail_read_bytes, 128));
    RL_CO_TRY(tail, co_await bytes_at(source, held, size - tail_bytes, tail_bytes));
    Archive archive;
    {
        RL_CO_TRY(end, find_zip_end(tail, size));
        archive.end = end;
    }
    if (archive.end.zip64_record_offset_bytes) {
        RL_CO_TRY(record,
                  co_await bytes_at(source, held, *archive.end.zip64_record_offset_bytes, zip64_end_record_bytes));
        RL_CO_TRY(end, apply_zip64_end_record(archive.end, record));
        archive.end = end;
    }
    if (archive.end.directory_length_bytes > directory_bytes_max) {
        co_return zip_error("central directory of " + str(archive.end.directory_length_bytes) + " bytes (limit " +
                            str(directory_bytes_max) + ")");
    }
    RL_CO_TRY(directory,
              co_await bytes_at(source, held, archive.end.directory_offset_bytes, archive.end.directory_length_bytes));
    RL_CO_TRY(entries, parse_central_directory(directory, archive.end));
    archive.entries = std::move(entries);
    RL_CO_TRY_VOID(index_archive(archive));
    co_return archive;
}

// What the reads of data.pkl and the small records found.
struct Records {
    std::unordered_map<std::size_t, std::uint64_t> known_offsets; // entry index -> data offset (local header)
    std::unordered_map<std::string_view, std::span<const std::byte>> small_data; // by record name
    std::span<const std::byte> pickle;
};

// data.pkl's header and the small records torch writes right after it, in file order: the
// region [start, end) that one read covers.
struct PickleRegion {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::vector<const ZipEntry*> entries;
};

PickleRegion pickle_region(const Archive& archive, const ZipEntry& pickle_entry) {
    PickleRegion region{
        pickle_entry.header_offset_bytes, archive.next_header[archive.index_of(&pickle_entry)], {&pickle_entry}};
    for (bool grew = true; grew;) {
        grew = false;
        for (const auto record : small_records) {
            const ZipEntry* entry = archive.find(record);
            // Only strictly forward: two records claiming one header offset must not loop here.
            if (entry != nullptr && entry->header_offset_bytes == region.end &&
                archive.next_header[archive.index_of(entry)] > region.end &&
                entry->length_bytes <= small_record_bytes_max) {
                region.end = archive.next_header[archive.index_of(entry)];
                region.entries.push_back(entry);
                grew = true;
            }
        }
    }
    return region;
}

// Read 3, if not held: data.pkl and the small records torch writes right after it.
Task<Result<Records>> read_pickle_region(Source& source, HeldBytes& held, const Archive& archive,
                                         const PickleLimits& pickle_limits) {
    const ZipEntry& pickle_entry = *archive.find("data.pkl");
    RL_CO_TRY_VOID(check_stored(pickle_entry));
    const PickleRegion region = pickle_region(archive, pickle_entry);
    if (pickle_entry.length_bytes > pickle_limits.pickle_bytes_max ||
        region.end - region.start > pickle_limits.pickle_bytes_max + (std::uint64_t{1} << 20)) {
        co_return zip_error("data.pkl of " + str(pickle_entry.length_bytes) + " bytes (region of " +
                            str(region.end - region.start) + ") is larger than the " +
                            str(pickle_limits.pickle_bytes_max) + "-byte limit");
    }
    RL_CO_TRY(bytes, co_await bytes_at(source, held, region.start, region.end - region.start));
    Records records;
    for (const ZipEntry* entry : region.entries) {
        RL_CO_TRY(record, record_in(bytes, region.start, *entry));
        records.known_offsets[archive.index_of(entry)] = record.first;
        if (entry == &pickle_entry) {
            records.pickle = record.second;
        } else {
            records.small_data[std::string_view(entry->name).substr(archive.prefix.size() + 1)] = record.second;
        }
    }
    co_return records;
}

// Small records elsewhere (not torch's order): one read each.
Task<Result<void>> read_scattered_small_records(Source& source, HeldBytes& held, const Archive& archive,
                                                Records& records) {
    for (const auto record : small_records) {
        const ZipEntry* entry = archive.find(record);
        if (entry == nullptr || records.small_data.contains(record)) {
            continue;
        }
        if (entry->length_bytes > small_record_bytes_max) {
            co_return zip_error("record '" + std::string(entry->name) + "' has " + str(entry->length_bytes) +
                                " bytes (at most " + str(small_record_bytes_max) + " expected)");
        }
        // Header, name, extra (each at most 64 KiB) and the data; not a hostile gap after it.
        const std::uint64_t next = std::min<std::uint64_t>(
            archive.next_header[archive.index_of(entry)],
            entry->header_offset_bytes + local_header_bytes + 2 * 0xFFFF + small_record_bytes_max);
        RL_CO_TRY(span, co_await bytes_at(source, held, entry->header_offset_bytes, next - entry->header_offset_bytes));
        RL_CO_TRY(found, record_in(span, entry->header_offset_bytes, *entry));
        records.known_offsets[archive.index_of(entry)] = found.first;
        records.small_data[record] = found.second;
    }
    co_return Result<void>{};
}

// byteorder (into the index) and .storage_alignment (returned), when present.
Result<std::uint64_t> apply_small_records(const Records& records, Index& index) {
    if (auto order = records.small_data.find("byteorder"); order != records.small_data.end()) {
        std::string_view text(reinterpret_cast<const char*>(order->second.data()), order->second.size());
        if (text == "big") {
            index.big_endian = true;
        } else if (text != "little") {
            return zip_error("record 'byteorder' says '" + std::string(text.substr(0, 40)) +
                             "' (only 'little' or 'big' are valid)");
        }
    }
    std::uint64_t alignment = storage_alignment_default;
    if (auto found = records.small_data.find(".storage_alignment"); found != records.small_data.end()) {
        RL_TRY(parsed, parse_decimal(found->second, ".storage_alignment"));
        if (parsed == 0 || parsed > storage_alignment_max) {
            return zip_error("record '.storage_alignment' says " + str(parsed) + " (expected 1.." +
                             str(storage_alignment_max) + ")");
        }
        alignment = parsed;
    }
    return alignment;
}

// Every record's data offset: the ones local headers stated, else the ones computed from the
// central directory.
struct DataOffsets {
    std::unordered_map<std::size_t, std::uint64_t> known;
    std::optional<std::vector<std::uint64_t>> computed;

    std::optional<std::uint64_t> of(std::size_t i) const {
        if (auto found = known.find(i); found != known.end()) {
            return found->second;
        }
        if (computed) {
            return (*computed)[i];
        }
        return std::nullopt;
    }
};

// §6.3: every record's data offset from the central directory, trusted only if the records are
// packed as torch packs them and every local header already held agrees.
Result<DataOffsets> data_offsets(const Archive& archive, const HeldBytes& held, Records& records,
                                 std::uint64_t alignment) {
    DataOffsets offsets{std::move(records.known_offsets),
                        torch_layout_data_offsets(archive.entries, archive.end.directory_offset_bytes, alignment)};
    for (std::size_t i = 0; i < archive.entries.size(); ++i) {
        const ZipEntry& entry = archive.entries[i];
        if (offsets.known.contains(i)) {
            continue;
        }
        if (auto header = held.find(entry.header_offset_bytes, local_header_bytes + entry.name.size())) {
            RL_TRY(offset, local_header_data_offset(*header, entry));
            offsets.known[i] = offset;
        }
    }
    for (const auto& [i, offset] : offsets.known) {
        if (offsets.computed && (*offsets.computed)[i] != offset) {
            offsets.computed.reset();
        }
    }
    return offsets;
}

// The version record, when its bytes are already held (it is usually last, in the tail).
Result<void> check_held_version(const Archive& archive, const HeldBytes& held, const DataOffsets& offsets) {
    const ZipEntry* version = archive.find("version");
    if (version == nullptr) {
        version = archive.find(".data/version");
    }
    if (auto offset = offsets.of(archive.index_of(version)); offset && version->length_bytes <= 64) {
        if (auto bytes = held.find(*offset, version->length_bytes)) {
            RL_TRY_VOID(parse_decimal(*bytes, version->name));
        }
    }
    return {};
}

// The pickle: a value tree, then tensors and storages (their offsets still relative).
Result<void> collect_from_pickle(const Archive& archive, std::span<const std::byte> pickle,
                                 const PickleLimits& pickle_limits, const ReadIndexOptions& options, Index& index) {
    const StorageRecordLength record_length = [&archive](const std::string& key) -> Result<std::uint64_t> {
        const ZipEntry* entry = archive.find_storage(key);
        if (entry == nullptr) {
            return zip_error("storage '" + key + "': record '" + archive.prefix + "/data/" + key +
                             "' is missing from the archive");
        }
        RL_TRY_VOID(check_stored(*entry));
        return entry->length_bytes;
    };
    // A flat state dict takes the fast path; anything else (or more tensors than the walk
    // allows) the general machine, which also gives every error.
    if (options.scan_state_dict) {
        auto scanned = scan_state_dict(pickle, pickle_limits);
        if (scanned && scanned->tensors.size() < WalkLimits{}.visits_max) {
            return collect_scanned_tensors(*scanned, record_length, index);
        }
    }
    RL_TRY(tree, unpickle_weights_only(pickle, pickle_limits));
    return collect_tensors(*tree.root, record_length, index);
}

// Each storage's data offset: computed, or (a zip packed otherwise) from its local header; then
// each tensor's offsets made absolute.
Task<Result<void>> place_storages(Source& source, HeldBytes& held, const Archive& archive, DataOffsets& offsets,
                                  Index& index) {
    for (auto& storage : index.storages) {
        const ZipEntry* entry = archive.find_storage(storage.key);
        const std::size_t i = archive.index_of(entry);
        std::optional<std::uint64_t> offset = offsets.of(i);
        if (!offset) {
            RL_CO_TRY(header, co_await bytes_at(source, held, entry->header_offset_bytes,
                                                local_header_bytes + entry->name.size()));
            RL_CO_TRY(parsed, local_header_data_offset(header, *entry));
            offset = parsed;
            offsets.known[i] = parsed;
        }
        const std::uint64_t limit = archive.next_header[i];
        if (*offset > limit || entry->length_bytes > limit - *offset) {
            co_return zip_error("record '" + std::string(entry->name) + "': data [" + str(*offset) + ", +" +
                                str(entry->length_bytes) + ") runs into the next record at " + str(limit));
        }
        storage.data_offset_bytes = *offset;
    }
    for (auto& tensor : index.tensors) {
        const std::uint64_t base = index.storages[*tensor.storage_index].data_offset_bytes;
        tensor.data_offset_bytes += base;
        tensor.record_offset_bytes += base;
    }
    co_return Result<void>{};
}

Task<Result<Index>> read_index_inner(Source& source, ReadIndexOptions options, HeldBytes& held) {
    RL_CO_TRY(archive, co_await read_archive(source, options, held));
    const PickleLimits pickle_limits;
    RL_CO_TRY(records, co_await read_pickle_region(source, held, archive, pickle_limits));
    RL_CO_TRY_VOID(co_await read_scattered_small_records(source, held, archive, records));

    Index index;
    index.format = &format;
    index.source_size_bytes = source.size_bytes();
    RL_CO_TRY(alignment, apply_small_records(records, index));
    RL_CO_TRY(offsets, data_offsets(archive, held, records, alignment));
    RL_CO_TRY_VOID(check_held_version(archive, held, offsets));
    RL_CO_TRY_VOID(collect_from_pickle(archive, records.pickle, pickle_limits, options, index));
    RL_CO_TRY_VOID(co_await place_storages(source, held, archive, offsets, index));
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

Error legacy_error() {
    return fail(errc::unsupported,
                "legacy torch format (pre-1.6, not a zip): re-save it with a newer torch "
                "(torch.save defaults to zip since 1.6)");
}

} // namespace ringload::torch_zip
