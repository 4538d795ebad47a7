// tests/bindings/piece_digests_test.cpp
//
// OrderedPieceHash (a file's bytes in any order, hashed in order and cut into pieces) fed
// chunks shuffled across threads, and hash_ranges (`ringload verify`'s reads and hashes)
// on real files: every digest against sha256() of the same bytes.
#include "signing/piece_digests.hpp"
#include "signing/ordered_piece_hash.hpp"

#include "../support/test_support.hpp"
#include "ringload/engine/hashes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <random>
#include <thread>

namespace ringload {
namespace {

using testing::random_bytes;

std::string raw(const Sha256Digest& digest) {
    return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

std::string sha_of(const std::vector<std::byte>& bytes, std::uint64_t begin, std::uint64_t end) {
    return raw(sha256(std::span(bytes).subspan(begin, end - begin)));
}

// Pieces [begin, ends...) hashed from chunks of uneven sizes handed over by 4 threads in
// shuffled order; the digests each piece got, in the order on_piece ran.
std::vector<std::pair<std::size_t, std::string>> hash_shuffled(const std::vector<std::byte>& bytes, std::uint64_t begin,
                                                               std::vector<std::uint64_t> ends, unsigned seed) {
    const std::uint64_t ends_hashed = ends.empty() ? begin : ends.back();
    std::mutex mutex;
    std::vector<std::pair<std::size_t, std::string>> got;
    OrderedPieceHash hash(begin, std::move(ends), [&](std::size_t piece, const Sha256Digest& digest) {
        std::lock_guard lock(mutex);
        got.emplace_back(piece, raw(digest));
    });
    std::mt19937 random(seed);
    std::vector<std::pair<std::uint64_t, std::size_t>> chunks;
    for (std::uint64_t at = begin; at < bytes.size();) {
        const std::size_t length = std::min<std::uint64_t>(1 + random() % 70'000, bytes.size() - at);
        chunks.emplace_back(at, length);
        at += length;
    }
    std::shuffle(chunks.begin(), chunks.end(), random);
    std::vector<std::thread> threads;
    for (std::size_t t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (std::size_t k = t; k < chunks.size(); k += 4) {
                const auto [offset, length] = chunks[k];
                hash.add(offset, std::span(bytes).subspan(offset, length), nullptr);
            }
        });
    }
    for (std::thread& thread : threads) {
        thread.join();
    }
    EXPECT_EQ(hash.wait(), ends_hashed); // where the bytes hashed in order end
    return got;
}

TEST(OrderedPieceHash, ShardsCutInsideChunksEachGetTheirOwnDigestInOrder) {
    const unsigned seed = std::random_device{}();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::vector<std::byte> bytes = random_bytes(1'000'003, seed);
    const std::vector<std::uint64_t> ends = piece_ends(bytes.size(), 65'536);
    ASSERT_EQ(ends.size(), 16u); // 15 whole shards and a short one
    const auto got = hash_shuffled(bytes, 0, ends, seed);
    ASSERT_EQ(got.size(), ends.size());
    for (std::size_t k = 0; k < ends.size(); ++k) {
        EXPECT_EQ(got[k].first, k);
        EXPECT_EQ(got[k].second, sha_of(bytes, k == 0 ? 0 : ends[k - 1], ends[k])) << "shard " << k;
    }
}

TEST(OrderedPieceHash, AWholeFileFromAnOffsetAndBytesPastTheLastPieceAreNotHashed) {
    const std::vector<std::byte> bytes = random_bytes(300'000, 7);
    const auto got = hash_shuffled(bytes, 1000, {250'000}, 7); // bytes 250,000.. come, unhashed
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].second, sha_of(bytes, 1000, 250'000));
}

TEST(OrderedPieceHash, AnEmptyFileIsTheDigestOfNoBytesAtWait) {
    std::vector<std::string> got;
    OrderedPieceHash hash(0, piece_ends(0, 0),
                          [&](std::size_t, const Sha256Digest& digest) { got.push_back(raw(digest)); });
    EXPECT_EQ(hash.wait(), 0u);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], raw(sha256({})));
    EXPECT_TRUE(piece_ends(0, 4096).empty()); // shard mode: an empty file has no shard
}

TEST(OrderedPieceHash, AbandonedDropsWhatIsParkedAndHashesNothingMore) {
    const std::vector<std::byte> bytes = random_bytes(10'000, 3);
    std::size_t pieces = 0;
    auto kept = std::make_shared<int>(0);
    OrderedPieceHash hash(0, {10'000}, [&](std::size_t, const Sha256Digest&) { ++pieces; });
    hash.add(5000, std::span(bytes).subspan(5000), kept); // parked: bytes 0.. have not come
    EXPECT_EQ(kept.use_count(), 2);
    hash.abandon();
    EXPECT_EQ(kept.use_count(), 1); // let go (a chunk: its slot back)
    hash.add(0, std::span(bytes).first(5000), kept);
    EXPECT_EQ(hash.wait(), 0u);
    EXPECT_EQ(pieces, 0u);
}

class HashRanges : public ::testing::Test {
protected:
    FolderFile write(const std::string& name, const std::vector<std::byte>& bytes) {
        return {name, testing::write_file(folder.path() / name, bytes).string(), bytes.size()};
    }

    testing::TempDir folder;
};

// Several files at once, whole and in shards, sizes off the O_DIRECT alignment, an empty one.
TEST_F(HashRanges, EveryFileAndShardMatchesItsBytes) {
    const std::vector<std::byte> big = random_bytes((9 << 20) + 4097, 11);
    const std::vector<std::byte> small = random_bytes(23, 12);
    const std::vector<std::byte> none;
    const std::vector<std::byte> middle = random_bytes((1 << 20) + 1, 13);
    std::vector<FolderFile> files{write("big", big), write("small", small), write("empty", none),
                                  write("middle", middle)};
    std::vector<ByteRange> ranges;
    for (std::uint64_t end : piece_ends(big.size(), 3 << 20)) {
        ranges.push_back({&files[0], ranges.empty() ? 0 : ranges.back().end, end});
    }
    ranges.push_back({&files[1], 0, small.size()});
    ranges.push_back({&files[2], 0, 0});
    ranges.push_back({&files[3], 0, middle.size()});
    auto digests = hash_ranges(ranges, 2);
    ASSERT_TRUE(digests) << digests.error().message();
    ASSERT_EQ(digests->size(), ranges.size());
    const std::vector<const std::vector<std::byte>*> contents{&big, &small, &none, &middle};
    for (std::size_t k = 0; k < ranges.size(); ++k) {
        const auto file = static_cast<std::size_t>(ranges[k].file - files.data());
        EXPECT_EQ((*digests)[k], sha_of(*contents[file], ranges[k].begin, ranges[k].end)) << "range " << k;
    }
}

// Both ways a file is read: small ones with pread, the others through the engine's run.
TEST_F(HashRanges, AFileCutShortSinceItWasListedFailsNamingIt) {
    for (const std::size_t size : {std::size_t{3} << 20, std::size_t{12} << 20}) {
        const std::vector<std::byte> bytes = random_bytes(size, 21);
        FolderFile file = write("cut-" + std::to_string(size), bytes);
        file.size_bytes = bytes.size() + 8192; // listed longer than it is now
        auto digests = hash_ranges({{&file, 0, file.size_bytes}}, 1);
        ASSERT_FALSE(digests) << size;
        EXPECT_EQ(digests.error().code, errc::truncated) << digests.error().message();
        EXPECT_NE(digests.error().message().find(file.path), std::string::npos) << digests.error().message();
    }
}

TEST_F(HashRanges, AMissingFileFailsNamingIt) {
    const FolderFile file{"gone", (folder.path() / "gone").string(), 10};
    auto digests = hash_ranges({{&file, 0, 10}}, 1);
    ASSERT_FALSE(digests);
    EXPECT_NE(digests.error().message().find(file.path), std::string::npos) << digests.error().message();
}

} // namespace
} // namespace ringload
