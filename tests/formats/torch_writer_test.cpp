// tests/formats/torch_writer_test.cpp
//
// The torch zip writer. Layout: records of torch 1.13's own files (tests/data/torch) replayed
// through lay_out_zip + header/descriptor/central bytes give those files byte for byte; a
// synthetic layout past 4 GiB gets torch's zip64 fields (no 4 GiB written). Pickle: the state
// dicts of those files pickle to their data.pkl byte for byte. Files written through the
// public API and through the device path with tiny slots (descriptors and the central
// directory finished after the run, across windows) parse back: every CRC right, every data
// offset 64-byte aligned, the bytes as given. Refusals last. The Python peer test
// (format_writers_test.py) loads our files with torch itself.
#include "../support/host_device_link.hpp"
#include "../support/test_support.hpp"
#include "formats/torch_writer/pickle_writer.hpp"
#include "formats/torch_writer/write_graph.hpp"
#include "formats/torch_writer/zip_writer_layout.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/engine/write_executor.hpp"
#include "ringload/io/file_sink.hpp"
#include "ringload/serializer.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace ringload {
namespace {

using torch_writer::zip_max32;

std::uint64_t le(std::span<const std::byte> bytes, std::uint64_t at, int width) {
    std::uint64_t value = 0;
    for (int i = 0; i < width; ++i) {
        value |= std::to_integer<std::uint64_t>(bytes[at + i]) << (8 * i);
    }
    return value;
}

// What a zip reader independent of the writer finds: entries from the central directory
// (found through the zip64 end records), data offsets from the local headers.
struct ParsedEntry {
    std::string name;
    std::uint64_t size = 0;
    std::uint32_t crc32 = 0;
    std::uint16_t flags = 0;
    std::uint64_t header_offset = 0;
    std::uint64_t data_offset = 0; // only when parsed from a whole file
    std::uint64_t descriptor_crc = 0;
};

struct ParsedZip {
    std::vector<ParsedEntry> entries;
    std::uint64_t central_offset = 0;
    std::uint64_t central_size = 0;
};

// `tail` holds the file's bytes from `base` on (the whole file: base 0). Local headers are
// read only when they are inside `tail`.
ParsedZip parse_zip(std::span<const std::byte> tail, std::uint64_t base = 0) {
    ParsedZip zip;
    const std::uint64_t end = tail.size();
    EXPECT_EQ(le(tail, end - 22, 4), 0x06054B50U);
    EXPECT_EQ(le(tail, end - 42, 4), 0x07064B50U);
    const std::uint64_t z64 = le(tail, end - 42 + 8, 8) - base;
    EXPECT_EQ(le(tail, z64, 4), 0x06064B50U);
    const std::uint64_t count = le(tail, z64 + 24, 8);
    zip.central_size = le(tail, z64 + 40, 8);
    zip.central_offset = le(tail, z64 + 48, 8);
    std::uint64_t at = zip.central_offset - base;
    for (std::uint64_t i = 0; i < count; ++i) {
        EXPECT_EQ(le(tail, at, 4), 0x02014B50U);
        ParsedEntry entry;
        entry.flags = static_cast<std::uint16_t>(le(tail, at + 8, 2));
        entry.crc32 = static_cast<std::uint32_t>(le(tail, at + 16, 4));
        entry.size = le(tail, at + 24, 4);
        const std::uint64_t name_length = le(tail, at + 28, 2);
        const std::uint64_t extra_length = le(tail, at + 30, 2);
        entry.header_offset = le(tail, at + 42, 4);
        entry.name.assign(reinterpret_cast<const char*>(tail.data()) + at + 46, name_length);
        std::uint64_t extra = at + 46 + name_length;
        const std::uint64_t extra_end = extra + extra_length;
        while (extra < extra_end) {
            const auto id = le(tail, extra, 2);
            std::uint64_t field = extra + 4;
            if (id == 1) {
                if (entry.size == zip_max32) {
                    entry.size = le(tail, field, 8);
                    EXPECT_EQ(le(tail, field + 8, 8), entry.size); // compressed = uncompressed
                    field += 16;
                }
                if (entry.header_offset == zip_max32) {
                    entry.header_offset = le(tail, field, 8);
                }
            }
            extra += 4 + le(tail, extra + 2, 2);
        }
        if (entry.header_offset >= base) {
            const std::uint64_t local = entry.header_offset - base;
            EXPECT_EQ(le(tail, local, 4), 0x04034B50U);
            entry.data_offset = entry.header_offset + 30 + le(tail, local + 26, 2) + le(tail, local + 28, 2);
            if (entry.size > 0) {
                const std::uint64_t descriptor = entry.data_offset + entry.size - base;
                EXPECT_EQ(le(tail, descriptor, 4), 0x08074B50U) << entry.name;
                entry.descriptor_crc = le(tail, descriptor + 4, 4);
            }
        }
        zip.entries.push_back(std::move(entry));
        at = extra_end;
    }
    EXPECT_EQ(at, zip.central_offset + zip.central_size - base);
    return zip;
}

std::span<const std::byte> data_of(std::span<const std::byte> file, const ParsedEntry& entry) {
    return file.subspan(entry.data_offset, entry.size);
}

// Rebuilds a file from its records the way the writer lays files out.
std::vector<std::byte> replay(std::span<const std::byte> file, const ParsedZip& zip) {
    std::vector<torch_writer::ZipEntry> entries;
    for (const auto& entry : zip.entries) {
        entries.push_back({entry.name, entry.size});
    }
    auto layout = torch_writer::lay_out_zip(entries);
    std::vector<std::byte> out;
    for (std::size_t i = 0; i < layout.records.size(); ++i) {
        auto& record = layout.records[i];
        record.crc32 = zip.entries[i].crc32;
        EXPECT_EQ(out.size(), record.header_offset);
        auto header = torch_writer::local_header_bytes(record);
        out.insert(out.end(), header.begin(), header.end());
        auto data = data_of(file, zip.entries[i]);
        out.insert(out.end(), data.begin(), data.end());
        auto descriptor = torch_writer::descriptor_bytes(record);
        out.insert(out.end(), descriptor.begin(), descriptor.end());
    }
    EXPECT_EQ(out.size(), layout.central_offset);
    auto central = torch_writer::central_bytes(layout);
    out.insert(out.end(), central.begin(), central.end());
    EXPECT_EQ(out.size(), layout.length_bytes);
    return out;
}

std::filesystem::path torch_dir() {
    return testing::data_dir() / "torch";
}

// Files torch 1.13 wrote (not hand-made), with their storages' sizes, names and CRCs.
const char* const torch_written[] = {"plain_state_dict",     "many_storages", "module_state_dict",
                                     "new_zipfile_explicit", "empty_tensor",  "scalar_0d",
                                     "shared_storage_views", "noncontiguous", "checkpoint_misc"};

TEST(TorchZipLayout, ReplaysTorchsOwnFilesByteForByte) {
    for (const char* name : torch_written) {
        SCOPED_TRACE(name);
        const auto file = testing::read_file(torch_dir() / (std::string(name) + ".pt"));
        ASSERT_FALSE(file.empty());
        const auto zip = parse_zip(file);
        const auto rebuilt = replay(file, zip);
        EXPECT_TRUE(rebuilt == file);
    }
}

TEST(TorchZipLayout, Zip64PastFourGiB) {
    const std::uint64_t big = (std::uint64_t{5} << 30) + 3;
    std::vector<torch_writer::ZipEntry> entries = {{"archive/data.pkl", 100},
                                                   {"archive/data/0", big},
                                                   {"archive/data/1", 10},
                                                   {"archive/data/2", 0},
                                                   {"archive/version", 2}};
    auto layout = torch_writer::lay_out_zip(entries);
    const auto& records = layout.records;
    EXPECT_FALSE(records[0].zip64());
    EXPECT_EQ(records[0].descriptor_bytes(), 16U);
    // The big record: local extra = zip64 (size, compressed 0) + 'FB'; 24-byte descriptor.
    ASSERT_TRUE(records[1].zip64());
    auto header = torch_writer::local_header_bytes(records[1]);
    ASSERT_EQ(header.size(), records[1].data_offset - records[1].header_offset);
    const std::uint64_t name_end = 30 + records[1].name.size();
    EXPECT_EQ(le(header, name_end, 2), 1U);
    EXPECT_EQ(le(header, name_end + 2, 2), 16U);
    EXPECT_EQ(le(header, name_end + 4, 8), big);
    EXPECT_EQ(le(header, name_end + 12, 8), 0U);
    EXPECT_EQ(le(header, name_end + 20, 2), 0x4246U);
    EXPECT_EQ(records[1].descriptor_bytes(), 24U);
    auto descriptor = torch_writer::descriptor_bytes(records[1]);
    ASSERT_EQ(descriptor.size(), 24U);
    EXPECT_EQ(le(descriptor, 8, 8), big);
    // Small records past 4 GiB: zip64 extra with the header offset only, 24-byte descriptors;
    // the empty one has none.
    for (std::size_t i = 2; i < records.size(); ++i) {
        SCOPED_TRACE(records[i].name);
        EXPECT_GE(records[i].header_offset, zip_max32);
        EXPECT_EQ(records[i].data_offset % 64, 0U);
        auto local = torch_writer::local_header_bytes(records[i]);
        const std::uint64_t end_of_name = 30 + records[i].name.size();
        EXPECT_EQ(le(local, end_of_name, 2), 1U);
        EXPECT_EQ(le(local, end_of_name + 2, 2), 8U);
        EXPECT_EQ(le(local, end_of_name + 4, 8), records[i].header_offset);
        EXPECT_EQ(records[i].descriptor_bytes(), records[i].size_bytes == 0 ? 0U : 24U);
        EXPECT_EQ(le(local, 6, 2), records[i].size_bytes == 0 ? 0x0800U : 0x0808U);
    }
    for (std::size_t i = 1; i < records.size(); ++i) {
        EXPECT_EQ(records[i].header_offset, records[i - 1].end_offset());
    }
    // The central directory parses back with the real sizes and offsets.
    auto central = torch_writer::central_bytes(layout);
    ASSERT_EQ(central.size(), layout.length_bytes - layout.central_offset);
    const auto zip = parse_zip(central, layout.central_offset);
    ASSERT_EQ(zip.entries.size(), records.size());
    for (std::size_t i = 0; i < records.size(); ++i) {
        EXPECT_EQ(zip.entries[i].name, records[i].name);
        EXPECT_EQ(zip.entries[i].size, records[i].size_bytes);
        EXPECT_EQ(zip.entries[i].header_offset, records[i].header_offset);
    }
    // EOCD fields saturate; the zip64 ones carry the values.
    EXPECT_EQ(le(central, central.size() - 22 + 16, 4), layout.central_offset >= zip_max32 ? zip_max32 : 0);
}

// The state dicts of torch's own files pickle to their data.pkl byte for byte.
TEST(TorchPickle, MatchesTorchsPickler) {
    for (const char* name : {"plain_state_dict", "many_storages"}) {
        SCOPED_TRACE(name);
        const auto manifest = testing::read_json(torch_dir() / (std::string(name) + ".json"));
        std::vector<torch_writer::PickledTensor> tensors;
        for (const auto& tensor : manifest["tensors"]) {
            torch_writer::PickledTensor pickled;
            for (const auto& part : tensor["path"]) {
                pickled.path.emplace_back(part.get<std::string>());
            }
            pickled.dtype = dtype_from_torch_name(tensor["dtype"].get<std::string>()).value();
            pickled.shape = tensor["shape"].get<std::vector<std::uint64_t>>();
            EXPECT_EQ(torch_writer::contiguous_strides(pickled.shape),
                      tensor["stride"].get<std::vector<std::uint64_t>>());
            tensors.push_back(std::move(pickled));
        }
        auto pickle = torch_writer::pickle_state_dict(tensors);
        ASSERT_TRUE(pickle) << pickle.error().message();
        const auto file = testing::read_file(torch_dir() / (std::string(name) + ".pt"));
        const auto zip = parse_zip(file);
        auto expected = data_of(file, zip.entries[0]);
        EXPECT_TRUE(std::equal(expected.begin(), expected.end(), pickle->bytes.begin(), pickle->bytes.end()));
        EXPECT_FALSE(pickle->needs_torch_2_1);
    }
}

TEST(TorchPickle, ContiguousStridesAsTorch) {
    using V = std::vector<std::uint64_t>;
    EXPECT_EQ(torch_writer::contiguous_strides({}), V{});
    EXPECT_EQ(torch_writer::contiguous_strides({0, 3}), (V{3, 1}));
    EXPECT_EQ(torch_writer::contiguous_strides({3, 0}), (V{1, 1}));
    EXPECT_EQ(torch_writer::contiguous_strides({2, 0, 3}), (V{3, 3, 1}));
    EXPECT_EQ(torch_writer::contiguous_strides({2, 3, 4, 5}), (V{60, 20, 5, 1}));
}

TEST(TorchPickle, RefusesNamesThatMakeNoObject) {
    auto refused = [](std::vector<torch_writer::PickledTensor> tensors) {
        auto pickle = torch_writer::pickle_state_dict(tensors);
        return pickle ? std::string() : pickle.error().message();
    };
    using P = torch_writer::PickledTensor;
    EXPECT_NE(refused({P{{"a"}}, P{{"a"}}}).find("twice"), std::string::npos);
    EXPECT_NE(refused({P{{"a"}}, P{{"a", "b"}}}).find("prefix"), std::string::npos);
    EXPECT_NE(refused({P{{"a", "b"}}, P{{"a"}}}).find("prefix"), std::string::npos);
    EXPECT_NE(refused({P{{"a", "b"}}, P{{"a", std::uint64_t{0}}}}).find("list indexes"), std::string::npos);
    EXPECT_NE(refused({P{{"a", std::uint64_t{1}}}}).find("0..n-1"), std::string::npos);
    EXPECT_NE(refused({P{{std::string("\xc3")}}}).find("UTF-8"), std::string::npos);
    EXPECT_EQ(refused({P{{"l", std::uint64_t{1}}}, P{{"l", std::uint64_t{0}}}}), "");
}

std::vector<std::byte> pattern(std::size_t length, unsigned seed) {
    std::vector<std::byte> bytes(length);
    for (std::size_t i = 0; i < length; ++i) {
        bytes[i] = static_cast<std::byte>((i * 131 + seed * 17 + 5) % 251);
    }
    return bytes;
}

struct Written {
    std::vector<std::vector<std::byte>> bytes;
    std::vector<TensorToWrite> tensors;
};

Written some_tensors() {
    Written w;
    w.bytes = {pattern(48, 1), pattern((2 << 20) + 6, 2), {}, pattern(8, 3), pattern(5000, 4)};
    w.tensors = {{{"w"}, DType::float32, {3, 4}, w.bytes[0]},
                 {{"model", "embed"}, DType::float16, {(1 << 20) + 3}, w.bytes[1]},
                 {{"empty"}, DType::float32, {0, 3}, w.bytes[2]},
                 {{"model", "layers", std::uint64_t{0}, "s"}, DType::int64, {}, w.bytes[3]},
                 {{"u"}, DType::uint8, {5000}, w.bytes[4]}};
    return w;
}

// Every record: data on a 64-byte boundary, CRC in descriptor and central directory right;
// records in torch >= 2.7's order; storages hold the tensors' bytes in pickle order.
void expect_sound(std::span<const std::byte> file, const Written& w, std::uint64_t length) {
    ASSERT_EQ(file.size(), length);
    const auto zip = parse_zip(file);
    std::vector<std::string> names;
    for (const auto& entry : zip.entries) {
        SCOPED_TRACE(entry.name);
        names.push_back(entry.name);
        EXPECT_EQ(entry.data_offset % 64, 0U);
        Crc32 crc;
        crc.update(data_of(file, entry));
        EXPECT_EQ(entry.crc32, crc.value());
        if (entry.size > 0) {
            EXPECT_EQ(entry.descriptor_crc, crc.value());
        }
        EXPECT_EQ(entry.flags, entry.size > 0 ? 0x0808 : 0x0800);
    }
    EXPECT_EQ(names,
              (std::vector<std::string>{"archive/data.pkl", "archive/.format_version", "archive/.storage_alignment",
                                        "archive/byteorder", "archive/data/0", "archive/data/1", "archive/data/2",
                                        "archive/data/3", "archive/data/4", "archive/version"}));
    // Pickle order groups "model" first-seen: w, model.embed, model.layers.0.s, empty, u.
    const std::size_t order[] = {0, 1, 3, 2, 4};
    for (std::size_t key = 0; key < 5; ++key) {
        auto data = data_of(file, zip.entries[4 + key]);
        const auto& expected = w.bytes[order[key]];
        EXPECT_TRUE(std::equal(data.begin(), data.end(), expected.begin(), expected.end())) << key;
    }
    auto version = data_of(file, zip.entries.back());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(version.data()), version.size()), "3\n");
}

TEST(TorchWriter, WritesThroughThePublicApi) {
    testing::TempDir dir;
    auto w = some_tensors();
    WriteOptions options;
    options.slot_size_bytes = 1 << 20;
    options.slot_count = 4;
    const auto path = dir.path() / "model.pt";
    auto written = write_torch(path.string(), w.tensors, options);
    ASSERT_TRUE(written) << written.error().message();
    expect_sound(testing::read_file(path), w, written->file_bytes);
}

// The device path, with one-page slots: descriptors and the central directory are finished in
// kept pages after the run, some of them across window boundaries.
TEST(TorchWriter, DeviceTensorsAndTinySlots) {
    testing::TempDir dir;
    testing::HostDeviceLink link;
    auto w = some_tensors();
    for (auto& tensor : w.tensors) {
        tensor.device = link.ordinal();
    }
    auto graph = torch_writer::WriteGraph::create(w.tensors, "device.pt", &link);
    ASSERT_TRUE(graph) << graph.error().message();
    const auto path = dir.path() / "device.pt";
    asio::io_context loop{1};
    auto sink = create_file_sink(loop, path.string()).value();
    auto ring = BufferRing::create(loop, {3, 4096}).value();
    WorkerPool pool(2);
    auto run = testing::run_to_completion(loop, run_write_plan(*sink, *ring, pool, (*graph)->plan(), **graph, {}));
    ASSERT_TRUE(run) << run.error().message();
    auto pages = (*graph)->finished_pages();
    ASSERT_TRUE(pages) << pages.error().message();
    std::vector<PageWrite> writes;
    for (const auto& [offset, bytes] : *pages) {
        writes.push_back({offset, bytes});
    }
    auto patched = testing::run_to_completion(loop, sink->write_pages(writes));
    ASSERT_TRUE(patched) << patched.error().message();
    ASSERT_TRUE(sink->commit((*graph)->plan().length_bytes));
    expect_sound(testing::read_file(path), w, (*graph)->plan().length_bytes);
}

TEST(TorchWriter, Refusals) {
    auto bytes = pattern(8, 0);
    TensorToWrite a{{"a"}, DType::float32, {2}, bytes};
    auto written = write_torch("redis://127.0.0.1:1/x", std::span(&a, 1));
    ASSERT_FALSE(written);
    EXPECT_NE(written.error().message().find("tensorizer files only"), std::string::npos) << written.error().message();
    TensorToWrite wrong{{"a"}, DType::float32, {3}, bytes};
    written = write_torch("/tmp/never-written.pt", std::span(&wrong, 1));
    ASSERT_FALSE(written);
    EXPECT_NE(written.error().message().find("need 12"), std::string::npos);
    EXPECT_FALSE(std::filesystem::exists("/tmp/never-written.pt"));
}

// float8 and uint16 need _rebuild_tensor_v3 (torch >= 2.1), as the hand-made fixture has it.
TEST(TorchPickle, Float8UsesRebuildV3) {
    std::vector<torch_writer::PickledTensor> tensors = {{{"q", "w"}, DType::float8_e4m3fn, {4, 6}},
                                                        {{"b"}, DType::bfloat16, {4}}};
    auto pickle = torch_writer::pickle_state_dict(tensors);
    ASSERT_TRUE(pickle) << pickle.error().message();
    EXPECT_TRUE(pickle->needs_torch_2_1);
    std::string text(reinterpret_cast<const char*>(pickle->bytes.data()), pickle->bytes.size());
    EXPECT_NE(text.find("torch._utils\n_rebuild_tensor_v3\n"), std::string::npos);
    // As torch.save writes it: torch >= 2.6's weights-only loader refuses torch.UntypedStorage.
    EXPECT_NE(text.find("torch.storage\nUntypedStorage\n"), std::string::npos);
    EXPECT_NE(text.find("torch\nfloat8_e4m3fn\n"), std::string::npos);
    EXPECT_NE(text.find("torch\nBFloat16Storage\n"), std::string::npos);
}

// Integers as Python's save_long writes them (values from pickle.dumps(v, 2)): numel and sizes of
// a > 4 GiB tensor need LONG1.
TEST(TorchPickle, LargeIntegersAsPython) {
    std::vector<torch_writer::PickledTensor> tensors = {{{"big"}, DType::int8, {3, std::uint64_t{1} << 31}},
                                                        {{"mid"}, DType::int8, {255, 256, 65536, 2147483647}}};
    auto pickle = torch_writer::pickle_state_dict(tensors);
    ASSERT_TRUE(pickle) << pickle.error().message();
    std::string hex;
    for (auto byte : pickle->bytes) {
        static constexpr char digits[] = "0123456789abcdef";
        hex += digits[std::to_integer<int>(byte) >> 4];
        hex += digits[std::to_integer<int>(byte) & 15];
    }
    EXPECT_NE(hex.find("8a050000008001"), std::string::npos);                 // numel 6442450944
    EXPECT_NE(hex.find("4b038a05000000800086"), std::string::npos);           // size (3, 2147483648)
    EXPECT_NE(hex.find("4bff4d00014a000001004affffff7f"), std::string::npos); // 255, 256, 65536, 2^31-1
}

// Meta tensors have no storage: _rebuild_meta_tensor_no_storage(dtype, shape, stride, False).
TEST(TorchPickle, MetaTensorsHaveNoStorage) {
    std::vector<torch_writer::PickledTensor> tensors = {
        {{"m"}, DType::float32, {2, 3}, true}, {{"x"}, DType::int64, {1}}, {{"b"}, DType::bfloat16, {}, true}};
    auto pickle = torch_writer::pickle_state_dict(tensors);
    ASSERT_TRUE(pickle) << pickle.error().message();
    EXPECT_EQ(pickle->storage_tensors, std::vector<std::size_t>{1});
    EXPECT_FALSE(pickle->needs_torch_2_1);
    EXPECT_TRUE(pickle->needs_newer_than_1_13); // torch 1.13 allowlists no bfloat16 dtype global
    std::string text(reinterpret_cast<const char*>(pickle->bytes.data()), pickle->bytes.size());
    EXPECT_NE(text.find("torch._utils\n_rebuild_meta_tensor_no_storage\n"), std::string::npos);
}

} // namespace
} // namespace ringload
