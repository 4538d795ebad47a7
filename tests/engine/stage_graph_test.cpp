// tests/engine/stage_graph_test.cpp
//
// The load stage graph (engine/stage_graph.hpp) and its stages, fed hand-cut chunks in chosen
// orders: a header that straddles two chunks reaches the format's hook once, whole; data that
// arrives before its header waits for the cipher the header arms; a cipher chunk that straddles
// slots gathers (in the host tensor, or in staging on the way to a "device") and opens when
// complete; pieces hashed in order whatever order they come in; and a failure half-way lets go
// of every chunk a stage held. The device is tests/support/host_device_link.hpp.
#include "ringload/engine/stage_graph.hpp"
#include "../support/host_device_link.hpp"
#include "../support/test_support.hpp"
#include "ringload/engine/executor.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/engine/plain_graph.hpp"
#include "ringload/engine/secretbox.hpp"
#include "ringload/engine/stages/decrypt.hpp"
#include "ringload/engine/stages/device_destination.hpp"
#include "ringload/engine/stages/hash.hpp"
#include "ringload/engine/stages/host_destination.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cstring>
#include <deque>
#include <mutex>
#include <random>

namespace ringload {
namespace {

constexpr std::uint64_t header_bytes = 8;
constexpr std::uint64_t data_bytes = 40;
constexpr std::uint64_t box_bytes = 16; // boxes [0,16) [16,32) [32,40)

// A source file (header, then data) and chunks cut from it, each in a buffer of its own as a
// slot would be; weak pointers tell whether anything still holds a chunk.
struct Stream {
    std::vector<std::byte> file;
    std::deque<std::vector<std::byte>> buffers;
    std::vector<std::weak_ptr<const Chunk>> issued;

    ChunkPtr chunk(std::uint64_t begin, std::uint64_t end) {
        buffers.emplace_back(file.begin() + static_cast<std::ptrdiff_t>(begin),
                             file.begin() + static_cast<std::ptrdiff_t>(end));
        auto made = std::make_shared<const Chunk>(SlotLease{}, begin, 0, end - begin, buffers.back().data());
        issued.push_back(made);
        return made;
    }
    bool all_released() const {
        return std::all_of(issued.begin(), issued.end(), [](const auto& chunk) { return chunk.expired(); });
    }
};

std::vector<std::byte> pattern(std::size_t length, int seed) {
    std::vector<std::byte> bytes(length);
    for (std::size_t i = 0; i < length; ++i) {
        bytes[i] = static_cast<std::byte>((i * 7 + static_cast<std::size_t>(seed)) & 0xFF);
    }
    return bytes;
}

// The data sealed in boxes of box_bytes, after an 8-byte header.
struct Sealed {
    SecretKey key = SecretKey::random();
    std::vector<std::byte> plaintext = pattern(data_bytes, 3);
    std::vector<SealedChunk> chunks;
    Stream stream;

    Sealed() {
        stream.file = pattern(header_bytes, 100);
        std::vector<std::byte> data = plaintext;
        const Nonce initial = random_nonce();
        for (std::uint64_t at = 0, i = 0; at < data_bytes; at += box_bytes, ++i) {
            const std::uint64_t length = std::min(box_bytes, data_bytes - at);
            const Nonce nonce = nonce_plus(initial, i);
            const Mac mac = seal_in_place({data.data() + at, length}, nonce, key);
            chunks.push_back({at, length, nonce, mac});
        }
        stream.file.insert(stream.file.end(), data.begin(), data.end());
    }
};

RecordSpec record_spec(std::vector<std::unique_ptr<Stage>> stages, std::byte* host_destination) {
    RecordSpec record;
    record.name = "tensor 'a'";
    record.record_offset_bytes = 0;
    record.data_offset_bytes = header_bytes;
    record.data_length_bytes = data_bytes;
    record.host_destination = host_destination;
    record.stages = std::move(stages);
    return record;
}

std::unique_ptr<StageGraph> one_record_graph(RecordSpec record, DeviceLink* device = nullptr) {
    std::vector<RecordSpec> records;
    records.push_back(std::move(record));
    return StageGraph::create(std::move(records), {"file.bin", 0, device}).value();
}

TEST(StageGraph, AHeaderThatStraddlesTwoChunksReachesItsHookOnceWhole) {
    Stream stream;
    stream.file = pattern(header_bytes + data_bytes, 1);
    std::vector<std::byte> destination(data_bytes);
    std::vector<std::unique_ptr<Stage>> stages;
    stages.push_back(std::make_unique<HostDestination>(destination.data()));
    RecordSpec record = record_spec(std::move(stages), destination.data());
    int calls = 0;
    std::vector<std::byte> seen;
    record.on_header = [&](std::span<const std::byte> header) {
        ++calls;
        seen.assign(header.begin(), header.end());
        return Result<void>{};
    };
    auto graph = one_record_graph(std::move(record));
    ASSERT_EQ(graph->plan().ranges.size(), 1U);
    EXPECT_EQ(graph->plan().ranges[0].length_bytes, header_bytes + data_bytes);
    for (auto [begin, end] : {std::pair<std::uint64_t, std::uint64_t>{20, 48}, {5, 20}, {0, 5}}) {
        ASSERT_TRUE(graph->process(stream.chunk(begin, end)));
    }
    ASSERT_TRUE(graph->finish());
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(std::equal(seen.begin(), seen.end(), stream.file.begin()));
    EXPECT_TRUE(std::equal(destination.begin(), destination.end(), stream.file.begin() + header_bytes));
    EXPECT_TRUE(stream.all_released());
}

TEST(StageGraph, AMissingHeaderByteFailsFinish) {
    Stream stream;
    stream.file = pattern(header_bytes + data_bytes, 1);
    std::vector<std::byte> destination(data_bytes);
    std::vector<std::unique_ptr<Stage>> stages;
    stages.push_back(std::make_unique<HostDestination>(destination.data()));
    auto graph = one_record_graph(record_spec(std::move(stages), destination.data()));
    ASSERT_TRUE(graph->process(stream.chunk(1, 48)));
    auto finished = graph->finish();
    ASSERT_FALSE(finished);
    EXPECT_EQ(finished.error().code, errc::truncated);
    EXPECT_EQ(finished.error().detail, "file.bin: tensor 'a': its header was never read completely");
}

// Data first, header last: the boxes wait in the tensor for the header's cipher (their slots
// go back at once), then open in place; box 1 straddles the two data chunks and gathers there.
TEST(StageGraph, DataBeforeItsHeaderWaitsForTheCipherAndStraddlingBoxesGather) {
    Sealed sealed;
    std::vector<std::byte> destination(data_bytes);
    auto host = std::make_unique<HostDestination>(destination.data());
    auto decrypt = std::make_unique<Decrypt>(*host);
    Decrypt* armed = decrypt.get();
    std::vector<std::unique_ptr<Stage>> stages;
    stages.push_back(std::move(decrypt));
    stages.push_back(std::move(host));
    RecordSpec record = record_spec(std::move(stages), destination.data());
    EXPECT_EQ(record.host_destination, destination.data());
    record.on_header = [&](std::span<const std::byte>) { return armed->arm(sealed.chunks, sealed.key); };
    auto graph = one_record_graph(std::move(record));
    EXPECT_TRUE(graph->in_place_ranges(1).empty()) << "ciphertext must pass through the slots";
    ASSERT_TRUE(graph->process(sealed.stream.chunk(30, 48)));
    ASSERT_TRUE(graph->process(sealed.stream.chunk(4, 30)));
    EXPECT_TRUE(sealed.stream.all_released()) << "on the host, pieces before the header wait in the tensor, "
                                                 "and their chunks (ring slots) go back at once";
    ASSERT_TRUE(graph->process(sealed.stream.chunk(0, 4)));
    ASSERT_TRUE(graph->finish());
    EXPECT_EQ(destination, sealed.plaintext);
    EXPECT_TRUE(sealed.stream.all_released());
}

// The device path: boxes open in their slots or in staging, go up through the link, and are
// hashed (with the header's prefix) in order from where they lie.
TEST(StageGraph, OnADeviceBoxesOpenInSlotsOrStagingAndHashInOrder) {
    Sealed sealed;
    testing::HostDeviceLink link;
    std::vector<std::byte> device_memory(data_bytes, std::byte{0xAB});
    auto device = std::make_unique<DeviceDestination>(link, device_memory.data(),
                                                      DeviceRecord{data_bytes, DType::uint8, std::nullopt, 0});
    auto decrypt = std::make_unique<Decrypt>(*device);
    auto hash = std::make_unique<Hash>(header_bytes, data_bytes);
    Decrypt* decrypt_at = decrypt.get();
    Hash* hash_at = hash.get();
    std::vector<std::unique_ptr<Stage>> stages;
    stages.push_back(std::move(decrypt));
    stages.push_back(std::move(device));
    stages.push_back(std::move(hash));
    RecordSpec record = record_spec(std::move(stages), nullptr);
    std::vector<std::byte> input(sealed.stream.file.begin(), sealed.stream.file.begin() + header_bytes);
    input.insert(input.end(), sealed.plaintext.begin(), sealed.plaintext.end());
    const Sha256Digest digest = sha256(input);
    record.on_header = [&](std::span<const std::byte> header) {
        StoredDigest stored{StoredDigest::Kind::sha256, 1, {}};
        stored.value.assign(reinterpret_cast<const std::byte*>(digest.data()),
                            reinterpret_cast<const std::byte*>(digest.data()) + digest.size());
        hash_at->arm({header.begin(), header.end()}, {stored});
        return decrypt_at->arm(sealed.chunks, sealed.key);
    };
    auto graph = one_record_graph(std::move(record), &link);
    EXPECT_TRUE(graph->in_place_ranges(1).empty());
    ASSERT_TRUE(graph->process(sealed.stream.chunk(30, 48)));
    ASSERT_TRUE(graph->process(sealed.stream.chunk(0, 30)));
    ASSERT_TRUE(graph->finish()) << "synchronizes the link";
    EXPECT_EQ(device_memory, sealed.plaintext);
    EXPECT_EQ(link.uploads(), 3U);
    graph.reset();
    EXPECT_TRUE(sealed.stream.all_released());
}

std::unique_ptr<StageGraph> hashed_graph(std::vector<std::byte>& destination, const std::vector<std::byte>& file,
                                         bool corrupt_digest) {
    auto hash = std::make_unique<Hash>(header_bytes, data_bytes);
    Hash* hash_at = hash.get();
    std::vector<std::unique_ptr<Stage>> stages;
    stages.push_back(std::make_unique<HostDestination>(destination.data()));
    stages.push_back(std::move(hash));
    RecordSpec record = record_spec(std::move(stages), destination.data());
    Crc32 crc;
    crc.update(file);
    std::uint32_t value = crc.value() ^ (corrupt_digest ? 1U : 0U);
    record.on_header = [hash_at, value](std::span<const std::byte> header) {
        StoredDigest stored{StoredDigest::Kind::crc32, 0, std::vector<std::byte>(4)};
        std::memcpy(stored.value.data(), &value, 4);
        hash_at->arm({header.begin(), header.end()}, {stored});
        return Result<void>{};
    };
    return one_record_graph(std::move(record));
}

TEST(StageGraph, PiecesAreHashedInOrderWhateverOrderTheyArriveIn) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    Stream stream;
    stream.file = pattern(header_bytes + data_bytes, 9);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> cuts;
    for (std::uint64_t at = 0; at < stream.file.size(); at += 3) {
        cuts.emplace_back(at, std::min<std::uint64_t>(at + 3, stream.file.size()));
    }
    std::shuffle(cuts.begin(), cuts.end(), std::mt19937(seed));
    for (bool corrupt : {false, true}) {
        std::vector<std::byte> destination(data_bytes);
        auto graph = hashed_graph(destination, stream.file, corrupt);
        for (auto [begin, end] : cuts) {
            (void)graph->process(stream.chunk(begin, end));
        }
        auto finished = graph->finish();
        if (!corrupt) {
            ASSERT_TRUE(finished) << finished.error().message();
            continue;
        }
        ASSERT_FALSE(finished);
        EXPECT_EQ(finished.error().code, errc::hash_mismatch);
        EXPECT_TRUE(finished.error().detail.starts_with("file.bin: tensor 'a': CRC32 mismatch: stored "))
            << finished.error().detail;
    }
}

// Data a network source read straight into the host tensor still comes in a chunk that counts a
// ring slot: a piece parked for its turn to be hashed must not keep that chunk, or one long
// in-order hash would hold the ring and stall the reads (it reads the tensor instead).
TEST(StageGraph, PiecesReadInPlaceAndParkedForTheHashLetTheirSlotGo) {
    Stream stream;
    stream.file = pattern(header_bytes + data_bytes, 5);
    std::vector<std::byte> destination(data_bytes);
    auto graph = hashed_graph(destination, stream.file, false);
    std::vector<std::weak_ptr<const Chunk>> in_place;
    for (std::uint64_t at = data_bytes; at > 0; at -= 10) { // last piece first: each one parks
        std::memcpy(destination.data() + at - 10, stream.file.data() + header_bytes + at - 10, 10);
        auto chunk =
            std::make_shared<const Chunk>(SlotLease{}, header_bytes + at - 10, 0, 10, destination.data() + at - 10);
        in_place.push_back(chunk);
        ASSERT_TRUE(graph->process(chunk));
    }
    for (const auto& chunk : in_place) {
        EXPECT_TRUE(chunk.expired()) << "a parked hash piece holds its chunk (and so its slot)";
    }
    ASSERT_TRUE(graph->process(stream.chunk(0, header_bytes))); // the header: now every piece hashes
    auto finished = graph->finish();
    ASSERT_TRUE(finished) << finished.error().message();
}

// A box whose MAC fails, found when the header arrives last: the graph stops, and every chunk
// that a stage held (parked before the header, waiting for its hash turn) comes back.
TEST(StageGraph, AFailureHalfWayLetsGoOfEveryChunk) {
    Sealed sealed;
    sealed.chunks[1].mac[0] ^= 1;
    testing::HostDeviceLink link;
    std::vector<std::byte> device_memory(data_bytes);
    auto device = std::make_unique<DeviceDestination>(link, device_memory.data(),
                                                      DeviceRecord{data_bytes, DType::uint8, std::nullopt, 0});
    auto decrypt = std::make_unique<Decrypt>(*device);
    Decrypt* decrypt_at = decrypt.get();
    std::vector<std::unique_ptr<Stage>> stages;
    stages.push_back(std::move(decrypt));
    stages.push_back(std::move(device));
    stages.push_back(std::make_unique<Hash>(header_bytes, data_bytes)); // never armed: pieces wait
    RecordSpec record = record_spec(std::move(stages), nullptr);
    record.on_header = [&](std::span<const std::byte>) { return decrypt_at->arm(sealed.chunks, sealed.key); };
    auto graph = one_record_graph(std::move(record), &link);
    ASSERT_TRUE(graph->process(sealed.stream.chunk(30, 48)));
    ASSERT_TRUE(graph->process(sealed.stream.chunk(4, 30)));
    auto failed = graph->process(sealed.stream.chunk(0, 4));
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code, errc::decryption_failed);
    EXPECT_NE(failed.error().detail.find("file.bin: tensor 'a': cipher chunk 2 of 3 (data bytes 16..32) failed"),
              std::string::npos)
        << failed.error().detail;
    ASSERT_TRUE(link.synchronize()); // copies queued before the failure drop their chunks
    EXPECT_TRUE(sealed.stream.all_released());
    auto later = graph->process(sealed.stream.chunk(0, 4));
    ASSERT_FALSE(later);
    EXPECT_EQ(later.error().detail, failed.error().detail) << "the first failure wins";
    EXPECT_EQ(graph->finish().error().detail, failed.error().detail);
}

TEST(PlainGraph, ABigEndianSpanIsSwappedOnTheHostOnceCompleteAndRefusedSplitOnADevice) {
    Stream stream;
    stream.file = pattern(12, 5);
    std::vector<std::byte> destination(12);
    auto host = build_plain_graph({{0, 12, destination.data(), "storage 'data/0'", DType::int32, true, std::nullopt}},
                                  nullptr, "model.pt")
                    .value();
    ASSERT_EQ(host->in_place_ranges(1).size(), 0U) << "under a MiB";
    ASSERT_TRUE(host->process(stream.chunk(6, 12)));
    ASSERT_TRUE(host->process(stream.chunk(0, 6)));
    ASSERT_TRUE(host->finish());
    for (std::size_t at = 0; at < 12; at += 4) {
        EXPECT_TRUE(std::equal(destination.begin() + at, destination.begin() + at + 4,
                               std::make_reverse_iterator(stream.file.begin() + at + 4)));
    }
    testing::HostDeviceLink link;
    auto device = build_plain_graph({{0, 12, destination.data(), "storage 'data/0'", DType::int32, true, std::nullopt}},
                                    &link, "model.pt")
                      .value();
    auto split = device->process(stream.chunk(0, 6));
    ASSERT_FALSE(split);
    EXPECT_EQ(split.error().code, errc::unsupported);
    EXPECT_NE(split.error().detail.find("model.pt: storage 'data/0': a big-endian element straddles"),
              std::string::npos);
}

TEST(PlainGraph, NearbySpansAreReadAsOneRangeAndOverlapsRefused) {
    std::vector<std::byte> memory(100);
    auto graph = build_plain_graph({{1000, 10, memory.data(), "b", DType::uint8, false, std::nullopt},
                                    {0, 10, memory.data() + 10, "a", DType::uint8, false, std::nullopt},
                                    {1 << 20, 10, memory.data() + 20, "c", DType::uint8, false, std::nullopt}},
                                   nullptr, "x.safetensors")
                     .value();
    ASSERT_EQ(graph->plan().ranges.size(), 2U);
    EXPECT_EQ(graph->plan().ranges[0].offset_bytes, 0U);
    EXPECT_EQ(graph->plan().ranges[0].length_bytes, 1010U);
    auto overlapping = build_plain_graph({{0, 10, memory.data(), "a", DType::uint8, false, std::nullopt},
                                          {5, 10, memory.data() + 10, "b", DType::uint8, false, std::nullopt}},
                                         nullptr, "x.safetensors");
    ASSERT_FALSE(overlapping);
    EXPECT_EQ(overlapping.error().detail, "x.safetensors: b overlaps a in the source");
}

// A first record of an embedding's size: the first small record after it is read first, its
// range cut out of the merged one; a small first record changes nothing.
TEST(PlainGraph, ALargeFirstRecordHasTheNextSmallOneReadFirst) {
    constexpr std::uint64_t mib = 1 << 20;
    std::vector<std::byte> memory(1); // never written: only the plan is looked at
    auto spans = [&](std::uint64_t first_bytes) {
        return std::vector<PlainSpan>{
            {0, first_bytes, memory.data(), "wte", DType::uint8, false, std::nullopt},
            {first_bytes, 20 * mib, memory.data(), "big", DType::uint8, false, std::nullopt},
            {first_bytes + 20 * mib, 3 * mib, memory.data(), "wpe", DType::uint8, false, std::nullopt},
            {first_bytes + 23 * mib, 40 * mib, memory.data(), "rest", DType::uint8, false, std::nullopt}};
    };
    auto large = build_plain_graph(spans(StageGraph::lead_record_min_bytes), nullptr, "x.safetensors").value();
    const std::uint64_t at = StageGraph::lead_record_min_bytes + 20 * mib;
    ASSERT_EQ(large->plan().ranges.size(), 3U);
    EXPECT_EQ(large->plan().ranges[0].end_bytes(), at);
    EXPECT_EQ(large->plan().ranges[1].offset_bytes, at);
    EXPECT_EQ(large->plan().ranges[1].length_bytes, 3 * mib);
    EXPECT_EQ(large->plan().ranges[2].offset_bytes, at + 3 * mib);
    EXPECT_EQ(large->plan().read_first, 1U);
    EXPECT_EQ(large->plan().total_bytes(), at + 43 * mib);
    auto small = build_plain_graph(spans(StageGraph::lead_record_min_bytes - 1), nullptr, "x.safetensors").value();
    EXPECT_EQ(small->plan().ranges.size(), 1U);
    EXPECT_FALSE(small->plan().read_first);
}

// A file in memory, read back in pieces of random length on later turns of the loop.
class MemorySource final : public Source {
public:
    MemorySource(std::vector<std::byte> bytes, unsigned seed) : bytes_(std::move(bytes)), random_(seed) {}
    const std::string& name() const override { return name_; }
    std::uint64_t size_bytes() const override { return bytes_.size(); }
    std::size_t alignment_bytes() const override { return 1; }
    std::string describe() const override { return "memory"; }
    Task<Result<std::size_t>> read_some_at(std::uint64_t offset, ReadTarget target) override {
        auto loop = co_await boost::asio::this_coro::executor;
        co_await boost::asio::post(loop, boost::asio::use_awaitable);
        co_return fill(offset, target.bytes(), true);
    }
    Task<Result<std::size_t>> read_small_at(std::uint64_t offset, std::span<std::byte> destination) override {
        co_return fill(offset, destination, false);
    }

private:
    std::size_t fill(std::uint64_t offset, std::span<std::byte> destination, bool short_read) {
        auto n = static_cast<std::size_t>(std::min<std::uint64_t>(destination.size(), bytes_.size() - offset));
        if (short_read && n > 1) {
            n = std::uniform_int_distribution<std::size_t>(1, n)(random_);
        }
        std::memcpy(destination.data(), bytes_.data() + offset, n);
        return n;
    }

    std::vector<std::byte> bytes_;
    std::mt19937 random_;
    std::string name_ = "memory://";
};

// Encrypted records, each with a header, hashed: the file's layout and the plaintext of each.
struct SealedFile {
    struct Record {
        std::uint64_t offset = 0;
        std::vector<std::byte> header;
        std::vector<std::byte> plaintext;
        std::vector<SealedChunk> chunks;
        Sha256Digest digest{};
    };
    SecretKey key = SecretKey::random();
    std::vector<Record> records;
    std::vector<std::byte> file;

    explicit SealedFile(std::initializer_list<std::uint64_t> lengths) {
        int seed = 0;
        for (std::uint64_t length : lengths) {
            Record record;
            record.offset = file.size();
            record.header = pattern(24, ++seed);
            record.plaintext = pattern(length, ++seed);
            std::vector<std::byte> data = record.plaintext;
            const Nonce initial = random_nonce();
            for (std::uint64_t at = 0, i = 0; at < length; at += 4096, ++i) {
                const std::uint64_t box = std::min<std::uint64_t>(4096, length - at);
                const Nonce nonce = nonce_plus(initial, i);
                record.chunks.push_back({at, box, nonce, seal_in_place({data.data() + at, box}, nonce, key)});
            }
            std::vector<std::byte> input = record.header;
            input.insert(input.end(), record.plaintext.begin(), record.plaintext.end());
            record.digest = sha256(input);
            file.insert(file.end(), record.header.begin(), record.header.end());
            file.insert(file.end(), data.begin(), data.end());
            records.push_back(std::move(record));
        }
    }

    RecordSpec spec(std::size_t k, std::vector<std::byte>& memory, DeviceLink* device) const {
        const Record& record = records[k];
        std::unique_ptr<Destination> place;
        if (device != nullptr) {
            place = std::make_unique<DeviceDestination>(*device, memory.data(),
                                                        DeviceRecord{memory.size(), DType::uint8, std::nullopt, 0});
        } else {
            place = std::make_unique<HostDestination>(memory.data());
        }
        auto decrypt = std::make_unique<Decrypt>(*place);
        auto hash = std::make_unique<Hash>(record.header.size(), record.plaintext.size());
        RecordSpec spec;
        spec.name = "record " + std::to_string(k);
        spec.record_offset_bytes = record.offset;
        spec.data_offset_bytes = record.offset + record.header.size();
        spec.data_length_bytes = record.plaintext.size();
        spec.on_header = [this, &record, decrypt = decrypt.get(),
                          hash = hash.get()](std::span<const std::byte> header) {
            StoredDigest stored{StoredDigest::Kind::sha256, 1, {}};
            const auto* digest = reinterpret_cast<const std::byte*>(record.digest.data());
            stored.value.assign(digest, digest + record.digest.size());
            hash->arm({header.begin(), header.end()}, {stored});
            return decrypt->arm(record.chunks, key);
        };
        spec.stages.push_back(std::move(decrypt));
        spec.stages.push_back(std::move(place));
        spec.stages.push_back(std::move(hash));
        return spec;
    }
};

// The real executor, ring and two workers over short reads: pieces of many records arrive
// concurrently and in any order, and every record comes out whole, on the host and on a device.
TEST(StageGraph, ConcurrentPiecesOfManyRecordsComeOutWhole) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const SealedFile sealed({5000, 0, 70000, 123, 16384, 40000, 4096});
    for (bool on_device : {false, true}) {
        SCOPED_TRACE(on_device ? "device" : "host");
        testing::HostDeviceLink link;
        DeviceLink* device = on_device ? &link : nullptr;
        std::vector<std::vector<std::byte>> memory;
        std::vector<RecordSpec> records;
        for (std::size_t k = 0; k < sealed.records.size(); ++k) {
            memory.emplace_back(sealed.records[k].plaintext.size());
        }
        for (std::size_t k = 0; k < sealed.records.size(); ++k) {
            records.push_back(sealed.spec(k, memory[k], device));
        }
        auto graph = StageGraph::create(std::move(records), {"memory://", 0, device}).value();
        ASSERT_EQ(graph->plan().ranges.size(), 1U);
        boost::asio::io_context loop{1};
        MemorySource source(sealed.file, seed);
        auto ring = BufferRing::create(loop, {3, 4096}).value();
        WorkerPool pool(2);
        auto stats = testing::run_to_completion(loop, run_plan(source, *ring, pool, graph->plan(), *graph, {}));
        ASSERT_TRUE(stats) << stats.error().message();
        for (std::size_t k = 0; k < sealed.records.size(); ++k) {
            EXPECT_EQ(memory[k], sealed.records[k].plaintext) << "record " << k;
        }
    }
}

// --- Record completion (StageGraph::on_record_done) -------------------------------------------

// What on_record_done saw: each call's id, and whether the record's memory held its final bytes
// at that moment (checked inside the call, as a caller would use them).
struct Completions {
    std::mutex mutex;
    std::vector<std::size_t> ids;
    std::vector<bool> final_bytes;

    std::function<void(std::size_t)> recorder(std::function<bool(std::size_t)> check) {
        return [this, check = std::move(check)](std::size_t id) {
            const bool final = check(id);
            std::lock_guard lock(mutex);
            ids.push_back(id);
            final_bytes.push_back(final);
        };
    }
    std::size_t count() {
        std::lock_guard lock(mutex);
        return ids.size();
    }
};

// A hashed record completes when its last piece was hashed and the sum matched, before the
// graph finishes; one whose sum does not match never completes.
TEST(RecordDone, AHashedRecordCompletesOnceHashedAndNeverOnAMismatch) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    Stream stream;
    stream.file = pattern(header_bytes + data_bytes, 9);
    const std::vector<std::byte> data(stream.file.begin() + header_bytes, stream.file.end());
    std::vector<std::pair<std::uint64_t, std::uint64_t>> cuts;
    for (std::uint64_t at = 0; at < stream.file.size(); at += 5) {
        cuts.emplace_back(at, std::min<std::uint64_t>(at + 5, stream.file.size()));
    }
    std::shuffle(cuts.begin(), cuts.end(), std::mt19937(seed));
    for (bool corrupt : {false, true}) {
        std::vector<std::byte> destination(data_bytes);
        auto graph = hashed_graph(destination, stream.file, corrupt);
        Completions done;
        graph->on_record_done(done.recorder([&](std::size_t) { return destination == data; }));
        for (std::size_t k = 0; k < cuts.size(); ++k) {
            EXPECT_EQ(done.count(), 0U) << "complete before its last piece came in";
            (void)graph->process(stream.chunk(cuts[k].first, cuts[k].second));
        }
        if (corrupt) {
            EXPECT_EQ(done.count(), 0U) << "a record whose hash failed was handed over";
            EXPECT_FALSE(graph->finish());
            EXPECT_EQ(done.count(), 0U);
            continue;
        }
        ASSERT_EQ(done.count(), 1U) << "completes with its last piece, before finish()";
        EXPECT_TRUE(done.final_bytes[0]);
        ASSERT_TRUE(graph->finish());
        EXPECT_EQ(done.count(), 1U) << "once";
    }
}

// Ciphertext that comes before its header waits for the cipher: the record completes only
// when the header arrives (last here) and every box opened into the tensor.
TEST(RecordDone, AnEncryptedRecordCompletesWhenItsHeaderArmedTheCipherAndAllBoxesOpened) {
    Sealed sealed;
    std::vector<std::byte> destination(data_bytes);
    auto host = std::make_unique<HostDestination>(destination.data());
    auto decrypt = std::make_unique<Decrypt>(*host);
    Decrypt* decrypt_at = decrypt.get();
    std::vector<std::unique_ptr<Stage>> stages;
    stages.push_back(std::move(decrypt));
    stages.push_back(std::move(host));
    RecordSpec record = record_spec(std::move(stages), destination.data());
    record.id = 7;
    record.on_header = [&](std::span<const std::byte>) { return decrypt_at->arm(sealed.chunks, sealed.key); };
    auto graph = one_record_graph(std::move(record));
    Completions done;
    graph->on_record_done(done.recorder([&](std::size_t) { return destination == sealed.plaintext; }));
    ASSERT_TRUE(graph->process(sealed.stream.chunk(30, 48)));
    ASSERT_TRUE(graph->process(sealed.stream.chunk(8, 30)));
    EXPECT_EQ(done.count(), 0U) << "complete before its header was read";
    ASSERT_TRUE(graph->process(sealed.stream.chunk(0, 8)));
    ASSERT_EQ(done.count(), 1U);
    EXPECT_EQ(done.ids[0], 7U) << "the RecordSpec's id comes back";
    EXPECT_TRUE(done.final_bytes[0]);
    ASSERT_TRUE(graph->finish());
    EXPECT_EQ(done.count(), 1U);
}

// On a device a record completes once its copies landed (the test link runs them later, on
// threads of its own), not when they were queued.
TEST(RecordDone, ADeviceRecordCompletesAfterItsCopiesLanded) {
    Stream stream;
    stream.file = pattern(64, 4);
    std::vector<std::byte> device_memory(64, std::byte{0xAB});
    testing::HostDeviceLink link;
    auto graph = build_plain_graph({{0, 64, device_memory.data(), "tensor 'a'", DType::uint8, false, std::nullopt, 3}},
                                   &link, "x.safetensors")
                     .value();
    Completions done;
    graph->on_record_done(done.recorder([&](std::size_t) { return device_memory == stream.file; }));
    for (std::uint64_t at = 0; at < 64; at += 16) {
        ASSERT_TRUE(graph->process(stream.chunk(at, at + 16)));
    }
    ASSERT_TRUE(link.synchronize()); // waits for the completion call too
    ASSERT_EQ(done.count(), 1U) << "complete once copied, before finish()";
    EXPECT_EQ(done.ids[0], 3U);
    EXPECT_TRUE(done.final_bytes[0]) << "handed over before its copies landed";
    ASSERT_TRUE(graph->finish());
    EXPECT_EQ(done.count(), 1U);
}

// Records complete in the order their bytes do, each as soon as it is whole (here backwards);
// one without data at finish(); none once the run was abandoned.
TEST(RecordDone, RecordsCompleteInCompletionOrderAndNoneAfterAnAbandon) {
    Stream stream;
    stream.file = pattern(40, 2);
    std::vector<std::byte> memory(40);
    const auto spans = [&] {
        std::vector<PlainSpan> made;
        for (std::size_t k = 0; k < 4; ++k) {
            made.push_back({k * 10, 10, memory.data() + k * 10, "t" + std::to_string(k), DType::uint8, false,
                            std::nullopt, 100 + k});
        }
        made.push_back({40, 0, memory.data(), "empty", DType::uint8, false, std::nullopt, 200});
        return made;
    };
    auto graph = build_plain_graph(spans(), nullptr, "x.safetensors").value();
    Completions done;
    graph->on_record_done(done.recorder([&](std::size_t id) {
        const std::size_t k = id - 100;
        return id == 200 ||
               std::equal(memory.begin() + k * 10, memory.begin() + k * 10 + 10, stream.file.begin() + k * 10);
    }));
    for (std::uint64_t at = 40; at > 0; at -= 5) {
        ASSERT_TRUE(graph->process(stream.chunk(at - 5, at)));
    }
    EXPECT_EQ(done.ids, (std::vector<std::size_t>{103, 102, 101, 100}));
    ASSERT_TRUE(graph->finish());
    EXPECT_EQ(done.ids, (std::vector<std::size_t>{103, 102, 101, 100, 200})) << "the empty one at finish()";
    EXPECT_EQ(done.final_bytes, std::vector<bool>(5, true));

    std::fill(memory.begin(), memory.end(), std::byte{0});
    auto abandoned = build_plain_graph(spans(), nullptr, "x.safetensors").value();
    Completions none;
    abandoned->on_record_done(none.recorder([](std::size_t) { return true; }));
    ASSERT_TRUE(abandoned->process(stream.chunk(0, 10)));
    ASSERT_TRUE(abandoned->process(stream.chunk(10, 15)));
    EXPECT_EQ(none.ids, (std::vector<std::size_t>{100}));
    abandoned->abandon(); // a read failed, or the caller cancelled
    (void)abandoned->process(stream.chunk(15, 40));
    EXPECT_EQ(none.ids, (std::vector<std::size_t>{100})) << "completed after the run was abandoned";
}

// The real executor over short reads, pieces of many encrypted, hashed records concurrently:
// each record completes exactly once, with its final bytes, before the run ends.
TEST(RecordDone, ConcurrentRecordsEachCompleteOnceWithTheirFinalBytes) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const SealedFile sealed({5000, 0, 70000, 123, 16384, 40000, 4096});
    for (bool on_device : {false, true}) {
        SCOPED_TRACE(on_device ? "device" : "host");
        testing::HostDeviceLink link;
        DeviceLink* device = on_device ? &link : nullptr;
        std::vector<std::vector<std::byte>> memory;
        std::vector<RecordSpec> records;
        for (std::size_t k = 0; k < sealed.records.size(); ++k) {
            memory.emplace_back(sealed.records[k].plaintext.size());
        }
        for (std::size_t k = 0; k < sealed.records.size(); ++k) {
            records.push_back(sealed.spec(k, memory[k], device));
            records.back().id = k;
        }
        auto graph = StageGraph::create(std::move(records), {"memory://", 0, device}).value();
        Completions done;
        graph->on_record_done(done.recorder([&](std::size_t k) { return memory[k] == sealed.records[k].plaintext; }));
        boost::asio::io_context loop{1};
        MemorySource source(sealed.file, seed);
        auto ring = BufferRing::create(loop, {3, 4096}).value();
        WorkerPool pool(2);
        auto stats = testing::run_to_completion(loop, run_plan(source, *ring, pool, graph->plan(), *graph, {}));
        ASSERT_TRUE(stats) << stats.error().message();
        std::vector<std::size_t> ids = done.ids; // all in before the run returned
        std::sort(ids.begin(), ids.end());
        EXPECT_EQ(ids, (std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 6}));
        EXPECT_EQ(done.final_bytes, std::vector<bool>(7, true));
    }
}

} // namespace
} // namespace ringload
