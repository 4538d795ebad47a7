// tests/bindings/signed_file_check_test.cpp
//
// SignedFileCheck (a signed file's whole read, hashed in order beside the format's handler) and
// WrittenDigest (a write's windows hashed in file order), fed chunks and windows in shuffled
// order, against sha256() of the same bytes.
#include "signing/signed_file_check.hpp"
#include "write/written_digest.hpp"

#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <thread>

namespace ringload {
namespace {

using testing::random_bytes;

std::string raw(const Sha256Digest& digest) {
    return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

// Records what the format's side was handed: each byte once, by offset.
class RecordingHandler final : public ChunkHandler {
public:
    explicit RecordingHandler(std::size_t size) : seen(size, 0) {}
    Result<void> process(const ChunkPtr& chunk) override {
        std::lock_guard lock(mutex);
        for (std::size_t k = 0; k < chunk->bytes().size(); ++k) {
            seen[chunk->source_offset_bytes() + k] += 1;
            copy[chunk->source_offset_bytes() + k] = chunk->bytes()[k];
        }
        return {};
    }
    Result<void> finish() override { return {}; }
    std::mutex mutex;
    std::vector<int> seen;
    std::map<std::uint64_t, std::byte> copy;
};

SignedFile signed_file(const std::vector<std::byte>& bytes, std::uint64_t shard_bytes) {
    SignedFile file{"model/w.safetensors", "model.sig", bytes.size(), shard_bytes, {}};
    if (shard_bytes == 0) {
        file.digests.push_back(raw(sha256(bytes)));
        return file;
    }
    for (std::uint64_t at = 0; at < bytes.size(); at += shard_bytes) {
        const std::uint64_t end = std::min<std::uint64_t>(bytes.size(), at + shard_bytes);
        file.digests.push_back(raw(sha256({bytes.data() + at, end - at})));
    }
    return file;
}

// Runs the check over `bytes` in chunks of `chunk_bytes`, handed over in a shuffled order.
Result<void> run_check(std::vector<std::byte> bytes, const SignedFile& file, RecordingHandler& inner,
                       const Plan& inner_plan, bool copy_for_hash = false) {
    RL_TRY(check, SignedFileCheck::create(inner, inner_plan, file, bytes.size(), copy_for_hash));
    EXPECT_EQ(check->plan().total_bytes(), bytes.size());
    constexpr std::size_t chunk_bytes = 1000;
    std::vector<ChunkPtr> chunks;
    for (std::size_t at = 0; at < bytes.size(); at += chunk_bytes) {
        chunks.push_back(std::make_shared<const Chunk>(SlotLease{}, at, 0, std::min(chunk_bytes, bytes.size() - at),
                                                       bytes.data() + at));
    }
    std::shuffle(chunks.begin(), chunks.end(), std::mt19937(7));
    for (const ChunkPtr& chunk : chunks) {
        auto processed = check->process(chunk);
        if (!processed) {
            check->abandon();
            return processed;
        }
    }
    chunks.clear();
    return check->finish();
}

TEST(SignedFileCheck, HashesTheWholeFileAndHandsTheFormatOnlyItsPlan) {
    const auto bytes = random_bytes(10000, 1);
    Plan inner_plan;
    inner_plan.ranges = {{100, 150}, {4500, 3600}}; // [100, 250), [4500, 8100)
    for (const std::uint64_t shard : {std::uint64_t{0}, std::uint64_t{3000}}) {
        RecordingHandler inner(bytes.size());
        ASSERT_TRUE(run_check(bytes, signed_file(bytes, shard), inner, inner_plan)) << shard;
        for (std::size_t k = 0; k < bytes.size(); ++k) {
            const bool wanted = (k >= 100 && k < 250) || (k >= 4500 && k < 8100);
            ASSERT_EQ(inner.seen[k], wanted ? 1 : 0) << k;
            if (wanted) {
                ASSERT_EQ(inner.copy[k], bytes[k]);
            }
        }
    }
}

TEST(SignedFileCheck, AChangedByteFailsNamingTheFileAndShard) {
    const auto bytes = random_bytes(10000, 2);
    Plan inner_plan;
    inner_plan.ranges = {{0, 10}}; // the load wants 10 bytes; the byte that changed is far from them
    auto changed = bytes;
    changed[7777] ^= std::byte{1};
    RecordingHandler whole(bytes.size());
    auto failed = run_check(changed, signed_file(bytes, 0), whole, inner_plan);
    ASSERT_FALSE(failed);
    EXPECT_EQ(failed.error().code, errc::hash_mismatch);
    EXPECT_NE(failed.error().detail.find("model/w.safetensors does not match"), std::string::npos)
        << failed.error().detail;
    RecordingHandler sharded(bytes.size());
    failed = run_check(changed, signed_file(bytes, 3000), sharded, inner_plan);
    ASSERT_FALSE(failed);
    EXPECT_NE(failed.error().detail.find("shard 6000:9000"), std::string::npos) << failed.error().detail;
}

// Changes the bytes where they lie, as decryption and byte swaps do on the way to a device.
class ChangingHandler final : public ChunkHandler {
public:
    Result<void> process(const ChunkPtr& chunk) override {
        for (std::byte& byte : chunk->mutable_bytes()) {
            byte ^= std::byte{0x5a};
        }
        return {};
    }
    Result<void> finish() override { return {}; }
};

TEST(SignedFileCheck, HashesTheFilesBytesWhenTheFormatChangesThemInTheirSlot) {
    const auto bytes = random_bytes(10000, 5);
    Plan whole;
    whole.ranges = {{0, bytes.size()}};
    ChangingHandler changing;
    const SignedFile file = signed_file(bytes, 0); // outlives the check, as LoadOptions::signed_file does
    auto check = SignedFileCheck::create(changing, whole, file, bytes.size(), true);
    ASSERT_TRUE(check);
    auto copy = bytes; // the "slots"
    std::vector<ChunkPtr> chunks;
    for (std::size_t at = 0; at < copy.size(); at += 1000) {
        chunks.push_back(std::make_shared<const Chunk>(SlotLease{}, at, 0, 1000, copy.data() + at));
    }
    std::shuffle(chunks.begin(), chunks.end(), std::mt19937(3));
    for (const ChunkPtr& chunk : chunks) {
        ASSERT_TRUE((*check)->process(chunk));
    }
    chunks.clear();
    EXPECT_TRUE((*check)->finish());
    EXPECT_NE(copy, bytes); // the handler did change them
}

TEST(SignedFileCheck, AFileOfAnotherSizeIsRefusedBeforeReading) {
    const auto bytes = random_bytes(100, 3);
    RecordingHandler inner(bytes.size());
    Plan plan;
    const SignedFile file = signed_file(bytes, 0);
    auto created = SignedFileCheck::create(inner, plan, file, 101, false);
    ASSERT_FALSE(created);
    EXPECT_NE(created.error().detail.find("changed"), std::string::npos);
}

TEST(SignedFileCheck, AnEmptyFileIsTheDigestOfNoBytes) {
    const std::vector<std::byte> none;
    RecordingHandler inner(0);
    EXPECT_TRUE(run_check(none, signed_file(none, 0), inner, Plan{}));
    auto wrong = signed_file(none, 0);
    wrong.digests[0][0] ^= 1;
    EXPECT_FALSE(run_check(none, wrong, inner, Plan{}));
}

class NoProducer final : public PieceProducer {
public:
    Result<void> produce_part(const WritePiece&, std::uint64_t, std::span<std::byte>) override { return {}; }
    Result<void> produce_whole(const WritePiece&, std::span<std::byte>, std::span<std::byte>) override { return {}; }
};

TEST(WrittenDigest, WindowsFilledInAnyOrderHashInFileOrder) {
    const auto bytes = random_bytes(1 << 20, 4);
    constexpr std::size_t window = 64 << 10;
    std::vector<std::size_t> order(bytes.size() / window);
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), std::mt19937(9));
    NoProducer inner;
    WrittenDigest digest(inner);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (std::size_t k = t; k < order.size(); k += 4) {
                digest.window_filled(order[k] * window, {bytes.data() + order[k] * window, window});
            }
        });
    }
    for (auto& thread : threads) {
        thread.join();
    }
    const auto written = digest.digest(bytes.size());
    ASSERT_TRUE(written.has_value());
    EXPECT_EQ(*written, sha256(bytes));
    NoProducer patched_inner;
    WrittenDigest patched(patched_inner);
    patched.window_filled(0, bytes);
    patched.invalidate();
    EXPECT_FALSE(patched.digest(bytes.size()).has_value());
}

} // namespace
} // namespace ringload
