// tests/io/object_cache_test.cpp
//
// The cache's on-disk entry and its filler thread (io/src/cache_entry.hpp, cache_filler.hpp),
// under the sanitizer presets too: pieces added in any order and at any boundaries become whole
// blocks with the CRC32 of their bytes, a block missing some bytes is never listed, a torn map
// is ignored, another version empties the entry, claims exclude each other across opens, and
// the least recently used entry is evicted for room. End to end against real servers:
// tests/bindings/cache_test.py.
#include "cache_entry.hpp"
#include "cache_filler.hpp"
#include "ringload/engine/hashes.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

namespace ringload::object_cache {
namespace {

namespace fs = std::filesystem;

struct TempDir {
    TempDir()
        : path(fs::temp_directory_path() /
               ("ringload-cache-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++))) {
        fs::create_directories(path);
    }
    ~TempDir() { fs::remove_all(path); }
    fs::path path;
    static inline int counter = 0;
};

std::vector<std::byte> object_bytes(std::size_t size) {
    std::vector<std::byte> bytes(size);
    std::mt19937 random(7);
    for (std::byte& b : bytes) {
        b = static_cast<std::byte>(random());
    }
    return bytes;
}

std::uint32_t crc_of(std::span<const std::byte> bytes) {
    Crc32 crc;
    crc.update(bytes);
    return crc.value();
}

std::vector<std::string> maps_in(const fs::path& entry) {
    std::vector<std::string> maps;
    for (const auto& file : fs::directory_iterator(entry)) {
        if (file.path().filename().string().starts_with("map-")) {
            maps.push_back(file.path().string());
        }
    }
    return maps;
}

TEST(ObjectCache, PiecesInAnyOrderBecomeWholeBlocks) {
    TempDir dir;
    const std::size_t size = 5 * block_bytes + 1000; // a short last block
    const std::vector<std::byte> object = object_bytes(size);
    {
        auto entry = CacheEntry::open(dir.path, "fake://object");
        ASSERT_TRUE(entry) << entry.error().detail;
        ASSERT_TRUE(*(*entry)->adopt("v1", size));
        // Pieces at odd boundaries, shuffled, leaving out 10 bytes of block 2.
        std::vector<std::pair<std::size_t, std::size_t>> pieces;
        for (std::size_t at = 0; at < size;) {
            const std::size_t length = std::min<std::size_t>(size - at, 12345 + at % 7000);
            pieces.emplace_back(at, length);
            at += length;
        }
        std::shuffle(pieces.begin(), pieces.end(), std::mt19937(3));
        CacheFiller filler(**entry, "fake://object");
        const std::size_t hole = 2 * block_bytes + 500;
        for (auto [at, length] : pieces) {
            const std::size_t end = at + length;
            if (at < hole + 10 && end > hole) { // split around the hole
                if (at < hole) {
                    filler.add(at, std::span(object).subspan(at, hole - at));
                }
                if (end > hole + 10) {
                    filler.add(hole + 10, std::span(object).subspan(hole + 10, end - hole - 10));
                }
                continue;
            }
            filler.add(at, std::span(object).subspan(at, length));
        }
    } // the filler commits as it goes
    auto reopened = CacheEntry::open(dir.path, "fake://object");
    ASSERT_TRUE(reopened) << reopened.error().detail;
    const CacheEntry& entry = **reopened;
    EXPECT_EQ(entry.version(), "v1");
    EXPECT_FALSE(entry.complete());
    for (std::uint64_t block = 0; block < entry.block_count(); ++block) {
        const std::size_t begin = block * block_bytes;
        const std::size_t length = std::min(block_bytes, size - begin);
        EXPECT_EQ(entry.holds(block), block != 2) << block;
        if (entry.holds(block)) {
            EXPECT_EQ(entry.crc(block), crc_of(std::span(object).subspan(begin, length))) << block;
        }
    }
    EXPECT_EQ(entry.held_bytes(), size - block_bytes);
    std::ifstream data(entry.data_path(), std::ios::binary);
    std::vector<char> kept(size);
    data.read(kept.data(), static_cast<std::streamsize>(size));
    EXPECT_EQ(std::memcmp(kept.data(), object.data(), block_bytes), 0);
}

TEST(ObjectCache, TornMapIsIgnoredAndAnotherVersionEmptiesTheEntry) {
    TempDir dir;
    const std::vector<std::byte> object = object_bytes(3 * block_bytes);
    fs::path entry_path;
    {
        auto entry = CacheEntry::open(dir.path, "fake://object");
        ASSERT_TRUE(entry);
        ASSERT_TRUE(*(*entry)->adopt("v1", object.size()));
        entry_path = (*entry)->path();
        CacheFiller filler(**entry, "fake://object");
        filler.add(0, object);
        filler.flush();
    }
    {
        auto whole = CacheEntry::open(dir.path, "fake://object");
        ASSERT_TRUE(whole);
        EXPECT_TRUE((*whole)->complete());
        auto other_uri = CacheEntry::open(dir.path, "fake://another");
        ASSERT_TRUE(other_uri);
        EXPECT_EQ((*other_uri)->version(), "") << "another URI has its own entry";
    }
    const std::vector<std::string> maps = maps_in(entry_path);
    ASSERT_EQ(maps.size(), 1u);
    const auto full = fs::file_size(maps[0]);
    fs::resize_file(maps[0], full - 3);
    {
        auto torn = CacheEntry::open(dir.path, "fake://object");
        ASSERT_TRUE(torn);
        EXPECT_EQ((*torn)->version(), "");
        EXPECT_FALSE((*torn)->holds(0));
    }
    fs::resize_file(maps[0], full); // zeros at the end: the map's own CRC fails
    auto changed = CacheEntry::open(dir.path, "fake://object");
    ASSERT_TRUE(changed);
    EXPECT_FALSE((*changed)->holds(0));
    ASSERT_TRUE(*(*changed)->adopt("v2", 2 * block_bytes));
    EXPECT_TRUE(maps_in(entry_path).empty()) << "the old version's maps are gone";
    EXPECT_EQ(fs::file_size((*changed)->data_path()), 2 * block_bytes);
}

TEST(ObjectCache, ClaimsExcludeAndAnEntryInUseIsNotReset) {
    TempDir dir;
    auto first = CacheEntry::open(dir.path, "fake://object");
    auto second = CacheEntry::open(dir.path, "fake://object");
    ASSERT_TRUE(first && second);
    ASSERT_TRUE(*(*first)->adopt("v1", 8 * block_bytes));
    ASSERT_TRUE(*(*second)->adopt("v1", 8 * block_bytes));
    EXPECT_TRUE((*first)->claim(0, 3));
    EXPECT_TRUE((*first)->claim(2, 5)) << "a claim overlapping one's own";
    EXPECT_FALSE((*second)->claim(5, 6));
    EXPECT_TRUE((*second)->claim(6, 7));
    {
        CacheFiller filler(**first, "fake://object");
        const std::vector<std::byte> bytes = object_bytes(block_bytes);
        filler.add(0, bytes);
    }
    auto third = CacheEntry::open(dir.path, "fake://object");
    ASSERT_TRUE(third);
    auto adopted = (*third)->adopt("v2", block_bytes);
    ASSERT_TRUE(adopted);
    EXPECT_FALSE(*adopted) << "two loads use v1's entry: v2 is not cached over it";
}

TEST(ObjectCache, MakeRoomEvictsTheLeastRecentlyUsed) {
    TempDir dir;
    const std::vector<std::byte> bytes = object_bytes(4 * block_bytes);
    std::vector<std::string> paths;
    for (const char* uri : {"fake://old", "fake://new"}) {
        auto entry = CacheEntry::open(dir.path, uri);
        ASSERT_TRUE(entry);
        ASSERT_TRUE(*(*entry)->adopt("v1", bytes.size()));
        paths.push_back((*entry)->path());
        CacheFiller filler(**entry, uri);
        filler.add(0, bytes);
        ::usleep(20'000); // distinct last-use times
    }
    auto in_use = CacheEntry::open(dir.path, "fake://new"); // touched, and held
    ASSERT_TRUE(in_use);
    EXPECT_TRUE(make_room(dir.path, "", bytes.size(), 2 * bytes.size() + block_bytes));
    EXPECT_FALSE(fs::exists(paths[0])) << "the older entry went";
    EXPECT_TRUE(fs::exists(paths[1]));
    EXPECT_FALSE(make_room(dir.path, "", 2 * bytes.size(), 2 * bytes.size())) << "an entry in use stays";
    EXPECT_TRUE(fs::exists(paths[1]));
    EXPECT_TRUE(make_room(dir.path, "", 1 << 30, 0)) << "0: no limit";
}

} // namespace
} // namespace ringload::object_cache
