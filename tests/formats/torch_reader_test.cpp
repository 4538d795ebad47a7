// tests/formats/torch_reader_test.cpp
//
// The torch.save zip reader against every fixture in tests/data/torch (manifests written by the
// fixture generator from torch 1.13 and hand-made torch >= 2.1 layouts): names, paths, dtypes,
// shapes, strides, storage keys, identity and offsets, and the values (each view gathered into
// C order from the storage bytes, byte-swapped for big-endian files, sha256 against the
// manifest). Malicious pickles are refused with the forbidden name and leave no trace; bad
// views, legacy files and hostile pickle bytes give clear errors. A counting Source checks the
// "at most 3 reads" promise on every loadable fixture.
#include "../support/counting_source.hpp"
#include "../support/test_support.hpp"
#include "formats/torch/pickle_machine.hpp"
#include "formats/torch/reader.hpp"
#include "formats/torch/state_dict.hpp"
#include "formats/torch/zip_directory.hpp"
#include "ringload/engine/hashes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>

namespace ringload::torch_zip {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

fs::path torch_dir() {
    return testing::data_dir() / "torch";
}

using testing::CountingSource;

Result<Index> read_file_index(CountingSource& source, ReadIndexOptions options = {}) {
    boost::asio::io_context loop;
    return testing::run_to_completion(loop, read_index(source, options));
}

std::vector<std::string> fixtures_expecting(const std::string& expect) {
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(torch_dir())) {
        if (entry.path().extension() == ".json" &&
            testing::read_json(entry.path())["expect"].get<std::string>() == expect) {
            files.push_back(entry.path().stem().string() + ".pt");
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

nlohmann::json manifest_of(const std::string& file) {
    return testing::read_json(torch_dir() / (fs::path(file).stem().string() + ".json"));
}

CountingSource source_of(const std::string& file) {
    return CountingSource((torch_dir() / file).string(), testing::read_file(torch_dir() / file));
}

std::string component_text(const PathComponent& component) {
    if (const auto* key = std::get_if<std::string>(&component)) {
        return *key;
    }
    return std::to_string(std::get<std::uint64_t>(component));
}

std::vector<std::byte> read_bytes(CountingSource& source, std::uint64_t offset, std::uint64_t length) {
    std::vector<std::byte> bytes(length);
    boost::asio::io_context loop;
    std::span<std::byte> target(bytes);
    auto read = testing::run_to_completion(loop, read_exactly_at(source, offset, target));
    EXPECT_TRUE(read) << read.error().message();
    return bytes;
}

// The view's elements in C order, little-endian, as the manifest hashes them.
std::vector<std::byte> gather(const TensorInfo& tensor, std::span<const std::byte> storage, bool big_endian) {
    const std::size_t element = itemsize(tensor.dtype);
    const std::uint64_t numel = tensor.numel();
    std::vector<std::byte> out;
    out.reserve(numel * element);
    std::vector<std::uint64_t> at(tensor.shape.size(), 0);
    for (std::uint64_t n = 0; n < numel; ++n) {
        std::uint64_t index = tensor.storage_offset;
        for (std::size_t k = 0; k < at.size(); ++k) {
            index += at[k] * tensor.strides[k];
        }
        std::vector<std::byte> value(storage.begin() + static_cast<std::ptrdiff_t>(index * element),
                                     storage.begin() + static_cast<std::ptrdiff_t>((index + 1) * element));
        if (big_endian && element > 1) {
            const bool complex = tensor.dtype == DType::complex32 || tensor.dtype == DType::complex64 ||
                                 tensor.dtype == DType::complex128;
            const std::size_t part = complex ? element / 2 : element;
            for (std::size_t p = 0; p < element; p += part) {
                std::reverse(value.begin() + static_cast<std::ptrdiff_t>(p),
                             value.begin() + static_cast<std::ptrdiff_t>(p + part));
            }
        }
        out.insert(out.end(), value.begin(), value.end());
        for (std::size_t k = at.size(); k-- > 0;) {
            if (++at[k] < tensor.shape[k]) {
                break;
            }
            at[k] = 0;
        }
    }
    return out;
}

std::string sha256_hex(std::span<const std::byte> bytes) {
    const auto digest = sha256(bytes);
    return to_hex(digest);
}

void check_loadable(const std::string& file, ReadIndexOptions options) {
    SCOPED_TRACE(file + " (tail " + std::to_string(options.tail_read_bytes) + " bytes)");
    const auto manifest = manifest_of(file);
    auto source = source_of(file);
    auto index = read_file_index(source, options);
    ASSERT_TRUE(index) << index.error().message();
    EXPECT_LE(source.reads, 3u) << "read_index made " << source.reads << " reads";
    std::cout << "[ reads    ] " << file << " tail " << options.tail_read_bytes << ": " << source.reads << " reads, "
              << source.bytes_read << " bytes\n";

    EXPECT_EQ(index->format_name(), "torch");
    EXPECT_EQ(index->source_size_bytes, source.size_bytes());
    EXPECT_EQ(index->big_endian, manifest["format"]["byteorder"] == "big");

    // Storages: one per key, at the record's data offset.
    std::map<std::string, nlohmann::json> storages;
    for (const auto& storage : manifest["storages"]) {
        storages[storage["key"].get<std::string>()] = storage;
    }
    std::map<std::string, std::uint64_t> record_offsets;
    for (const auto& record : manifest["records"]) {
        record_offsets[record["name"].get<std::string>()] = record["data_offset"].get<std::uint64_t>();
    }
    EXPECT_EQ(index->storages.size(), storages.size());
    std::map<std::string, std::uint32_t> index_of_key;
    for (std::uint32_t i = 0; i < index->storages.size(); ++i) {
        const StorageInfo& storage = index->storages[i];
        SCOPED_TRACE("storage " + storage.key);
        ASSERT_TRUE(storages.contains(storage.key));
        EXPECT_TRUE(index_of_key.emplace(storage.key, i).second) << "storage key listed twice";
        const auto& want = storages[storage.key];
        EXPECT_EQ(storage.data_offset_bytes, want["data_offset"].get<std::uint64_t>());
        EXPECT_EQ(
            storage.data_offset_bytes,
            record_offsets[manifest["archive_prefix"].get<std::string>() + "/" + want["record"].get<std::string>()]);
        EXPECT_EQ(storage.byte_length, want["nbytes"].get<std::uint64_t>());
        const auto raw = read_bytes(source, storage.data_offset_bytes, storage.byte_length);
        EXPECT_EQ(sha256_hex(raw), want["sha256"].get<std::string>());
    }

    const auto& tensors = manifest["tensors"];
    ASSERT_EQ(index->tensors.size(), tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const auto& want = tensors[i];
        const TensorInfo& got = index->tensors[i];
        SCOPED_TRACE("tensor " + want["name"].get<std::string>());
        std::vector<std::string> path;
        for (const auto& component : got.path) {
            path.push_back(component_text(component));
        }
        EXPECT_EQ(nlohmann::json(path), want["path"]);
        std::string dotted;
        for (const auto& component : want["path"]) {
            dotted += (dotted.empty() ? "" : ".") + component.get<std::string>();
        }
        EXPECT_EQ(got.name, dotted);
        EXPECT_EQ(got.display_name(), dotted);
        EXPECT_EQ(std::string(torch_name(got.dtype)), want["dtype"].get<std::string>());
        EXPECT_EQ(nlohmann::json(got.shape), want["shape"]);
        EXPECT_EQ(nlohmann::json(got.strides), want["stride"]);
        EXPECT_EQ(got.storage_offset, want["storage_offset"].get<std::uint64_t>());
        EXPECT_EQ(got.byte_length, got.numel() * itemsize(got.dtype));
        ASSERT_TRUE(got.storage_index.has_value());
        ASSERT_LT(*got.storage_index, index->storages.size());
        const StorageInfo& storage = index->storages[*got.storage_index];
        EXPECT_EQ(storage.key, want["storage_key"].get<std::string>());
        EXPECT_EQ(*got.storage_index, index_of_key[storage.key]); // identity: one storage per key
        // The span the view reads, within its storage record.
        EXPECT_EQ(got.data_offset_bytes, storage.data_offset_bytes + got.storage_offset * itemsize(got.dtype));
        EXPECT_LE(got.data_offset_bytes + got.data_length_bytes, storage.data_offset_bytes + storage.byte_length);
        const auto storage_bytes = read_bytes(source, storage.data_offset_bytes, storage.byte_length);
        EXPECT_EQ(sha256_hex(gather(got, storage_bytes, index->big_endian)), want["sha256"].get<std::string>());
        if (got.numel() > 0) {
            // Every element the view touches lies in [data_offset, +data_length).
            std::uint64_t last = got.storage_offset;
            for (std::size_t k = 0; k < got.shape.size(); ++k) {
                last += (got.shape[k] - 1) * got.strides[k];
            }
            EXPECT_EQ(got.data_length_bytes, (last + 1 - got.storage_offset) * itemsize(got.dtype));
        } else {
            EXPECT_EQ(got.data_length_bytes, 0u);
        }
    }
}

TEST(torchZipFixtures, FixturesArePresent) {
    EXPECT_GE(fixtures_expecting("load").size(), 13u);
    EXPECT_GE(fixtures_expecting("reject").size(), 10u);
    EXPECT_EQ(fixtures_expecting("reject_legacy_format").size(), 1u);
}

TEST(torchZipFixtures, EveryLoadableFixtureMatchesItsManifest) {
    for (const auto& file : fixtures_expecting("load")) {
        check_loadable(file, ReadIndexOptions{});
    }
}

// A tail too small for the central directory: the directory and data.pkl take a read each.
TEST(torchZipFixtures, SmallTailReadsStillTakeAtMostThreeReads) {
    for (const std::size_t tail : {std::size_t{128}, std::size_t{1024}, std::size_t{4096}}) {
        for (const auto& file : fixtures_expecting("load")) {
            check_loadable(file, ReadIndexOptions{.tail_read_bytes = tail});
        }
    }
}

TEST(torchZipFixtures, MagicBytesTellZipFromLegacy) {
    for (const auto& entry : fs::directory_iterator(torch_dir())) {
        if (entry.path().extension() != ".pt") {
            continue;
        }
        const auto bytes = testing::read_file(entry.path());
        const bool legacy = manifest_of(entry.path().filename().string())["kind"] == "legacy";
        EXPECT_EQ(has_torch_zip_magic(bytes), !legacy) << entry.path();
        EXPECT_EQ(has_legacy_torch_magic(bytes), legacy) << entry.path();
    }
}

TEST(torchZipFixtures, LegacyFormatIsNamed) {
    for (const auto& file : fixtures_expecting("reject_legacy_format")) {
        auto source = source_of(file);
        auto index = read_file_index(source);
        ASSERT_FALSE(index) << file;
        EXPECT_EQ(index.error().code, errc::unsupported);
        const std::string message = index.error().message();
        EXPECT_NE(message.find("legacy torch format (pre-1.6, not a zip): re-save it with a newer torch "
                               "(torch.save defaults to zip since 1.6)"),
                  std::string::npos)
            << message;
        EXPECT_NE(message.find(file), std::string::npos) << message;
    }
}

// What each malicious fixture's pickle would import (its manifest's reject_reason names it too).
const std::map<std::string, std::string> forbidden_names = {
    {"malicious_builtins_eval.pt", "builtins.eval"},
    {"malicious_inst.pt", "os.system"},
    {"malicious_os_system.pt", "os.system"},
    {"malicious_persid_module.pt", "os.system"},
    {"malicious_posix_system.pt", "posix.system"},
    {"malicious_stack_global.pt", "os.system"},
    {"malicious_subprocess.pt", "subprocess.check_output"},
};

TEST(torchZipFixtures, MaliciousPicklesAreRefusedByName) {
    std::size_t malicious = 0;
    for (const auto& file : fixtures_expecting("reject")) {
        const auto manifest = manifest_of(file);
        if (manifest["kind"] != "malicious") {
            continue;
        }
        ++malicious;
        SCOPED_TRACE(file);
        ASSERT_TRUE(forbidden_names.contains(file)) << "a new malicious fixture: add its forbidden name";
        const std::string& name = forbidden_names.at(file);
        std::string reason = manifest["reject_reason"].get<std::string>();
        for (std::size_t at;
             (at = reason.find("\\n")) != std::string::npos || (at = reason.find('\n')) != std::string::npos;) {
            reason.replace(at, reason[at] == '\n' ? 1 : 2, ".");
        }
        EXPECT_NE(reason.find(name), std::string::npos) << "manifest reason: " << reason;

        const fs::path sentinel = manifest["sentinel"].get<std::string>();
        const bool existed = fs::exists(sentinel);
        auto source = source_of(file);
        auto index = read_file_index(source);
        ASSERT_FALSE(index);
        const std::string message = index.error().message();
        EXPECT_NE(message.find("forbidden global '" + name + "'"), std::string::npos) << message;
        EXPECT_NE(message.find("data.pkl"), std::string::npos) << message;
        EXPECT_NE(message.find(file), std::string::npos) << message;
        if (!existed) {
            EXPECT_FALSE(fs::exists(sentinel)) << "the payload ran: " << sentinel;
        }
    }
    EXPECT_EQ(malicious, forbidden_names.size());
}

TEST(torchZipFixtures, MalformedViewsAreRefusedNamingTheTensor) {
    const std::map<std::string, std::string> expected = {
        {"malformed_negative_stride.pt", "negative stride -1"},
        {"malformed_storage_too_small.pt", "storage smaller than its persistent id says"},
        {"malformed_view_out_of_bounds.pt", "view reads elements 2..5 of storage '0', which has 4 float32 elements"},
    };
    std::size_t seen = 0;
    for (const auto& file : fixtures_expecting("reject")) {
        if (manifest_of(file)["kind"] != "malformed") {
            continue;
        }
        ++seen;
        SCOPED_TRACE(file);
        ASSERT_TRUE(expected.contains(file));
        auto source = source_of(file);
        auto index = read_file_index(source);
        ASSERT_FALSE(index);
        const std::string message = index.error().message();
        EXPECT_EQ(index.error().code, errc::format_error);
        EXPECT_NE(message.find("tensor 'weight'"), std::string::npos) << message;
        EXPECT_NE(message.find(expected.at(file)), std::string::npos) << message;
    }
    EXPECT_EQ(seen, expected.size());
}

// ---- zip structure on edited copies of a fixture ----

std::vector<std::byte> fixture_bytes(const std::string& file) {
    return testing::read_file(torch_dir() / file);
}

Result<Index> read_bytes_index(std::vector<std::byte> bytes) {
    CountingSource source("edited.pt", std::move(bytes));
    return read_file_index(source);
}

TEST(torchZipStructure, TruncatedAndGarbageFilesGiveClearErrors) {
    auto bytes = fixture_bytes("plain_state_dict.pt");
    for (const std::size_t keep :
         {std::size_t{0}, std::size_t{10}, std::size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
        std::vector<std::byte> cut(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(keep));
        auto index = read_bytes_index(cut);
        ASSERT_FALSE(index) << keep;
        EXPECT_NE(index.error().message().find("edited.pt"), std::string::npos) << index.error().message();
    }
    std::vector<std::byte> garbage(5000, std::byte{0x42});
    auto index = read_bytes_index(garbage);
    ASSERT_FALSE(index);
    EXPECT_NE(index.error().message().find("no end-of-central-directory record"), std::string::npos)
        << index.error().message();
}

TEST(torchZipStructure, TamperedLocalHeaderFallsBackToHeaderReads) {
    // Grow data/0's local extra by 64 bytes worth of name-length lie: the computed offsets no
    // longer hold, so the reader must notice and still agree with the manifest or refuse.
    auto bytes = fixture_bytes("plain_state_dict.pt");
    const auto manifest = manifest_of("plain_state_dict.pt");
    std::uint64_t header = 0;
    for (const auto& record : manifest["records"]) {
        if (record["name"] == "plain_state_dict/data/0") {
            header = record["header_offset"].get<std::uint64_t>();
        }
    }
    ASSERT_GT(header, 0u);
    bytes[header + 28] = std::byte{static_cast<unsigned char>(static_cast<unsigned>(bytes[header + 28]) + 64)};
    auto index = read_bytes_index(bytes);
    if (index) {
        EXPECT_EQ(index->storages[0].data_offset_bytes,
                  manifest["storages"][0]["data_offset"].get<std::uint64_t>() + 64);
    } else {
        EXPECT_NE(index.error().message().find("data/0"), std::string::npos) << index.error().message();
    }
}

// A zip of the same records written the plain way (no 'FB' padding, no descriptors, version 20),
// as a re-zipping tool would: the computed layout fails its check and the reader falls back to
// the local headers, still landing on the right bytes.
void put_le(std::vector<std::byte>& out, std::uint64_t value, int width) {
    for (int i = 0; i < width; ++i) {
        out.push_back(static_cast<std::byte>((value >> (8 * i)) & 0xFF));
    }
}

std::vector<std::byte> rezip_plainly(const std::string& file) {
    const auto source = fixture_bytes(file);
    const auto manifest = manifest_of(file);
    std::vector<std::byte> out;
    std::vector<std::byte> central;
    std::size_t count = 0;
    for (const auto& record : manifest["records"]) {
        const auto name = record["name"].get<std::string>();
        const auto data = record["data_offset"].get<std::uint64_t>();
        const auto size = record["size"].get<std::uint64_t>();
        const std::uint64_t header = out.size();
        put_le(out, 0x04034B50, 4);
        put_le(out, 20, 2);
        put_le(out, 0, 2);
        put_le(out, 0, 2);
        put_le(out, 0, 4);
        put_le(out, 0, 4);
        put_le(out, size, 4);
        put_le(out, size, 4);
        put_le(out, name.size(), 2);
        put_le(out, 3, 2); // a 3-byte extra field nobody knows
        for (char c : name) {
            out.push_back(static_cast<std::byte>(c));
        }
        put_le(out, 0, 3);
        out.insert(out.end(), source.begin() + static_cast<std::ptrdiff_t>(data),
                   source.begin() + static_cast<std::ptrdiff_t>(data + size));
        put_le(central, 0x02014B50, 4);
        put_le(central, 20, 2);
        put_le(central, 20, 2);
        put_le(central, 0, 2);
        put_le(central, 0, 2);
        put_le(central, 0, 4);
        put_le(central, 0, 4);
        put_le(central, size, 4);
        put_le(central, size, 4);
        put_le(central, name.size(), 2);
        put_le(central, 0, 2);
        put_le(central, 0, 2);
        put_le(central, 0, 2);
        put_le(central, 0, 2);
        put_le(central, 0, 4);
        put_le(central, header, 4);
        for (char c : name) {
            central.push_back(static_cast<std::byte>(c));
        }
        ++count;
    }
    const std::uint64_t directory = out.size();
    out.insert(out.end(), central.begin(), central.end());
    put_le(out, 0x06054B50, 4);
    put_le(out, 0, 4);
    put_le(out, count, 2);
    put_le(out, count, 2);
    put_le(out, central.size(), 4);
    put_le(out, directory, 4);
    put_le(out, 0, 2);
    return out;
}

TEST(torchZipStructure, PlainZipFallsBackToLocalHeaders) {
    for (const std::string file : {"plain_state_dict.pt", "shared_storage_views.pt", "handmade_big_endian.pt"}) {
        SCOPED_TRACE(file);
        const auto manifest = manifest_of(file);
        for (const std::size_t tail : {std::size_t{128}, std::size_t{256} << 10}) {
            CountingSource source("rezipped.pt", rezip_plainly(file));
            auto index = read_file_index(source, ReadIndexOptions{.tail_read_bytes = tail});
            ASSERT_TRUE(index) << index.error().message();
            if (tail == 128) {
                EXPECT_GT(source.reads, 3u); // one per storage header: the fallback, not the normal path
            } else {
                EXPECT_EQ(source.reads, 1u); // every local header was in the tail
            }
            ASSERT_EQ(index->tensors.size(), manifest["tensors"].size());
            for (const auto& storage : index->storages) {
                const auto raw = read_bytes(source, storage.data_offset_bytes, storage.byte_length);
                for (const auto& want : manifest["storages"]) {
                    if (want["key"] == storage.key) {
                        EXPECT_EQ(sha256_hex(raw), want["sha256"].get<std::string>()) << storage.key;
                    }
                }
            }
            for (std::size_t i = 0; i < index->tensors.size(); ++i) {
                const auto& got = index->tensors[i];
                const auto& storage = index->storages[*got.storage_index];
                const auto bytes = read_bytes(source, storage.data_offset_bytes, storage.byte_length);
                EXPECT_EQ(sha256_hex(gather(got, bytes, index->big_endian)),
                          manifest["tensors"][i]["sha256"].get<std::string>());
            }
        }
    }
}

// The central directory entry of `name`: the name's last occurrence is inside it.
std::size_t central_entry_of(const std::vector<std::byte>& bytes, const std::string& name) {
    const std::string_view all(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const std::size_t at = all.rfind(name);
    EXPECT_NE(at, std::string_view::npos) << name;
    return at - central_header_bytes;
}

TEST(torchZipStructure, RecordsSharingAHeaderOffsetAreRefusedNotLoopedOn) {
    auto bytes = fixture_bytes("handmade_torch27_layout.pt");
    const std::string prefix = manifest_of("handmade_torch27_layout.pt")["archive_prefix"].get<std::string>();
    const std::size_t first = central_entry_of(bytes, prefix + "/.format_version");
    const std::size_t second = central_entry_of(bytes, prefix + "/.storage_alignment");
    std::copy_n(bytes.begin() + static_cast<std::ptrdiff_t>(first + 42), 4,
                bytes.begin() + static_cast<std::ptrdiff_t>(second + 42));
    for (const std::size_t tail : {std::size_t{128}, std::size_t{256} << 10}) {
        CountingSource source("edited.pt", bytes);
        auto index = read_file_index(source, ReadIndexOptions{.tail_read_bytes = tail});
        ASSERT_FALSE(index);
        EXPECT_NE(index.error().message().find("edited.pt"), std::string::npos) << index.error().message();
    }
}

TEST(torchZipStructure, ComputedDataOffsetsMatchTheWorkedExample) {
    // §6.4: plain_state_dict/data.pkl at 0 -> data at 64; data/0 header at 1075 -> data at 1152.
    EXPECT_EQ(torch_data_offset(0, 25, 995, 64), 64u);
    EXPECT_EQ(torch_data_offset(1075, 23, 48, 64), 1152u);
    EXPECT_EQ(torch_data_offset(1216, 23, 10, 64), 1280u);
    // zip64 extras: a record of 4 GiB - 1 bytes (size + compressed size), a header beyond 4 GiB.
    EXPECT_EQ(torch_data_offset(0, 11, zip_max32, 64), 128u); // 30+11+20+4 = 65
    EXPECT_EQ(torch_data_offset(std::uint64_t{5} << 30, 26, 10, 64),
              (std::uint64_t{5} << 30) + 128); // +30+26+12+4 = 72
}

// ---- the pickle machine on hand-built bytes ----

// Pickle pieces: opcodes as bytes, BINUNICODE strings, GLOBAL lines.
std::string ops(std::initializer_list<int> bytes) {
    std::string out;
    for (const int byte : bytes) {
        out += static_cast<char>(byte);
    }
    return out;
}

std::string text(std::string_view value) {
    std::string out = "X";
    const auto n = static_cast<std::uint32_t>(value.size());
    for (int i = 0; i < 4; ++i) {
        out += static_cast<char>((n >> (8 * i)) & 0xFF);
    }
    return out + std::string(value);
}

std::string global(std::string_view module, std::string_view name) {
    return "c" + std::string(module) + "\n" + std::string(name) + "\n";
}

const std::string proto2 = ops({0x80, 2});

Result<PickleTree> unpickle(const std::string& pickle) {
    std::vector<std::byte> bytes(pickle.size());
    if (!pickle.empty()) {
        std::memcpy(bytes.data(), pickle.data(), pickle.size());
    }
    return unpickle_weights_only(bytes); // the tree owns what it refers to; the bytes may go
}

void expect_refused(const std::string& pickle, const std::string& words, errc code = errc::format_error) {
    auto tree = unpickle(pickle);
    ASSERT_FALSE(tree) << "accepted: " << testing::hex_of(pickle);
    EXPECT_EQ(tree.error().code, code) << tree.error().message();
    EXPECT_NE(tree.error().message().find(words), std::string::npos) << tree.error().message();
}

Result<std::uint64_t> no_records(const std::string&) {
    return std::uint64_t{0};
}

TEST(torchPickleMachine, BuildsPlainValues) {
    // {'a': -1 (LONG1), 'b': 1.5 (BINFLOAT), 'c': [None, True], 'd': b'\xff' (_codecs.encode)}
    const std::string pickle = proto2 + "}" + ops({'q', 0}) + "(" + text("a") + ops({0x8a, 1, 0xff}) + text("b") +
                               ops({'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0}) + text("c") + "]" + ops({'q', 1}) + "(N" +
                               ops({0x88}) + "e" + text("d") + global("_codecs", "encode") + text("\xc3\xbf") +
                               text("latin1") + ops({0x86}) + "Ru.";
    auto tree = unpickle(pickle);
    ASSERT_TRUE(tree) << tree.error().message();
    const Value& root = *tree->root;
    ASSERT_EQ(root.kind, ValueKind::dict);
    ASSERT_EQ(root.entries.size(), 4u);
    EXPECT_EQ(root.entries[0].second->integer, -1);
    EXPECT_EQ(root.entries[1].second->floating, 1.5);
    ASSERT_EQ(root.entries[2].second->items.size(), 2u);
    EXPECT_EQ(root.entries[2].second->items[1]->kind, ValueKind::boolean);
    EXPECT_EQ(root.entries[3].second->kind, ValueKind::bytes);
    EXPECT_EQ(root.entries[3].second->text, "\xff"s);
}

TEST(torchPickleMachine, RefusesTruncatedStreams) {
    expect_refused(proto2 + ops({'X', 0x10, 0, 0, 0}) + "ab", "truncated", errc::truncated);
    expect_refused(proto2 + "N", "without STOP", errc::truncated);
    expect_refused(proto2 + ops({'J', 1, 2}), "needs 4 bytes", errc::truncated);
    expect_refused(proto2 + "ctorch\nFloatSto", "no end of line", errc::truncated);
    expect_refused("", "without STOP", errc::truncated);
}

TEST(torchPickleMachine, RefusesHugeLengthsWithoutAllocating) {
    expect_refused(proto2 + ops({'X', 0xff, 0xff, 0xff, 0xff}), "needs 4294967295 bytes", errc::truncated);
    expect_refused(proto2 + ops({0x8a, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9}) + ".", "wider than 64 bits");
}

TEST(torchPickleMachine, RefusesStackUnderflowAndMemoMisuse) {
    expect_refused(proto2 + "s.", "stack underflow");
    expect_refused(proto2 + "N(" + ops({0x85}) + ".", "stack underflow"); // TUPLE1 may not reach below the MARK
    expect_refused(proto2 + "t.", "no MARK");
    expect_refused(proto2 + ".", "stack underflow");
    expect_refused(proto2 + ops({'h', 5}) + ".", "memo slot 5 was never stored");
    expect_refused(proto2 + ops({'q', 0}) + ".", "stack underflow");
    expect_refused(proto2 + "NNa.", "not a list");
    expect_refused(proto2 + "]NNs.", "not a dict");
}

// Memo slots: near ones live in a vector, far ones (the largest LONG_BINPUT, or slots that
// double with every store, which would size a vector past any memory) in a map; both found.
TEST(torchPickleMachine, MemoSlotsFarApartAreKeptWithoutAVectorOfThatSize) {
    std::string pickle = proto2 + "(";
    std::vector<std::uint32_t> slots = {0xffffffffu};
    for (std::uint32_t slot = 1; slot < 0x80000000u; slot *= 2) {
        slots.push_back(slot + 1000);
    }
    for (std::size_t k = 0; k < slots.size(); ++k) {
        const std::uint32_t slot = slots[k];
        pickle += ops({'K', static_cast<int>(k)}) +
                  ops({'r', int(slot & 0xff), int((slot >> 8) & 0xff), int((slot >> 16) & 0xff), int(slot >> 24)});
    }
    for (const std::uint32_t slot : slots) {
        pickle += ops({'j', int(slot & 0xff), int((slot >> 8) & 0xff), int((slot >> 16) & 0xff), int(slot >> 24)});
    }
    pickle += "t.";
    auto tree = unpickle(pickle);
    ASSERT_TRUE(tree) << tree.error().message();
    ASSERT_EQ(tree->root->items.size(), 2 * slots.size()); // each value stored, then fetched
    for (std::size_t k = 0; k < slots.size(); ++k) {
        EXPECT_EQ(tree->root->items[slots.size() + k]->integer, static_cast<std::int64_t>(k)) << "slot " << slots[k];
    }
}

TEST(torchPickleMachine, RefusesForbiddenGlobalsByName) {
    expect_refused(proto2 + global("os", "system") + text("ls") + ops({0x85}) + "R.", "forbidden global 'os.system'");
    expect_refused(proto2 + global("__builtin__", "eval") + ".", "forbidden global 'builtins.eval'");
    expect_refused(proto2 + text("os") + text("system") + ops({0x93}) + ".", "forbidden global 'os.system'");
    expect_refused(proto2 + "(" + text("ls") + "ios\nsystem\n.", "forbidden global 'os.system'");
    expect_refused(proto2 + global("torch._utils", "_rebuild_qtensor") + ".", "not supported by this reader",
                   errc::unsupported);
    // Allowed names, but only through GLOBAL; no class is instantiated.
    expect_refused(proto2 + text("collections") + text("OrderedDict") + ops({0x93}) + ".", "only GLOBAL may name it");
    expect_refused(proto2 + global("collections", "OrderedDict") + ")" + ops({0x81}) + ".",
                   "instantiating 'collections.OrderedDict'");
    expect_refused(proto2 + ops({0x95, 0, 0, 0, 0, 0, 0, 0, 0}) + ".", "not allowed");
}

TEST(torchPickleMachine, RefusesCallsAndPersistentIdsOutsideTheAllowlist) {
    expect_refused(proto2 + global("torch", "float16") + ")R.", "not callable");
    expect_refused(proto2 + "N)R.", "calls a None");
    expect_refused(proto2 + "(" + text("module") + "NtQ.", "not a ('storage', ...) tuple");
    expect_refused(proto2 + "(" + text("storage") + "NtQ.", "not ('storage', storage type");
    expect_refused(proto2 + "}Nb.", "BUILD on a dict");
}

TEST(torchPickleMachine, BoundsDeepNestingAndCycles) {
    // 10000 nested lists (no MARKs): the machine builds them, the walk refuses the depth.
    const std::string deep = proto2 + std::string(10000, ']') + std::string(9999, 'a') + ".";
    auto tree = unpickle(deep);
    ASSERT_TRUE(tree) << tree.error().message();
    Index index;
    auto walked = collect_tensors(*tree->root, no_records, index);
    ASSERT_FALSE(walked);
    EXPECT_NE(walked.error().message().find("nested deeper"), std::string::npos) << walked.error().message();

    // A list that contains itself (through the memo): refused, no hang.
    auto cycle = unpickle(proto2 + "]" + ops({'q', 0, 'h', 0}) + "a.");
    ASSERT_TRUE(cycle) << cycle.error().message();
    EXPECT_FALSE(collect_tensors(*cycle->root, no_records, index));

    // Doubling shared lists: 2^60 paths, refused by the visit bound quickly.
    std::string doubling = proto2 + "]" + ops({'q', 0});
    for (int i = 1; i < 60; ++i) {
        doubling += "]" + ops({'h', i - 1, 'h', i - 1, 0x86}) + "a" + ops({'q', i});
    }
    doubling += ".";
    auto shared = unpickle(doubling);
    ASSERT_TRUE(shared) << shared.error().message();
    auto walked_shared =
        collect_tensors(*shared->root, no_records, index, WalkLimits{.depth_max = 256, .visits_max = 100000});
    ASSERT_FALSE(walked_shared);
    EXPECT_NE(walked_shared.error().message().find("values to walk"), std::string::npos)
        << walked_shared.error().message();

    expect_refused(proto2 + std::string(5000, '(') + ".", "MARKs nested deeper");
}

} // namespace
} // namespace ringload::torch_zip
