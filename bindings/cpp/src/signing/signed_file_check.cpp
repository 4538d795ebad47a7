// bindings/cpp/src/signing/signed_file_check.cpp
#include "signing/signed_file_check.hpp"

#include "signing/model_folder.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace ringload {
namespace {

std::string shard_text(const SignedFile& file, std::size_t shard) {
    if (file.shard_bytes == 0) {
        return file.path;
    }
    const std::uint64_t begin = shard * file.shard_bytes;
    const std::uint64_t end = std::min(file.size_bytes, begin + file.shard_bytes);
    return file.path + " (shard " + std::to_string(begin) + ":" + std::to_string(end) + ")";
}

} // namespace

SignedFileCheck::SignedFileCheck(ChunkHandler& inner, const Plan& inner_plan, const SignedFile& file,
                                 bool copy_for_hash)
    : inner_(inner),
      inner_plan_(inner_plan),
      file_(file),
      copy_for_hash_(copy_for_hash),
      hash_(0, piece_ends(file.size_bytes, file.shard_bytes),
            [this](std::size_t shard, const Sha256Digest& digest) { check_shard(shard, digest); }) {
    if (file.size_bytes > 0) {
        plan_.ranges.push_back({0, file.size_bytes});
    }
    plan_.taper_end = true; // the file's hash, in order, waits for its last reads
}

Result<std::unique_ptr<SignedFileCheck>> SignedFileCheck::create(ChunkHandler& inner, const Plan& inner_plan,
                                                                 const SignedFile& file, std::uint64_t source_bytes,
                                                                 bool copy_for_hash) {
    if (source_bytes != file.size_bytes) {
        return fail(errc::hash_mismatch, file.signature_file + ": " + file.path + " has " +
                                             std::to_string(source_bytes) + " bytes, not the " +
                                             std::to_string(file.size_bytes) +
                                             " it had when checked (the file changed)");
    }
    const std::size_t expected = piece_ends(file.size_bytes, file.shard_bytes).size();
    if (file.digests.size() != expected) {
        return fail(errc::invalid_argument, file.path + ": " + std::to_string(file.digests.size()) +
                                                " signed digests for " + std::to_string(expected) + " shards");
    }
    return std::make_unique<SignedFileCheck>(inner, inner_plan, file, copy_for_hash);
}

Result<void> SignedFileCheck::process(const ChunkPtr& chunk) {
    if (failed_.load(std::memory_order_acquire)) {
        std::lock_guard lock(failure_mutex_);
        return *failure_;
    }
    // What the hash reads: the chunk itself, or (where the format changes bytes in their slot:
    // decryption and byte swaps on the way to a device) a copy taken before it does.
    std::span<const std::byte> bytes = chunk->bytes();
    std::shared_ptr<const void> keep = chunk;
    if (copy_for_hash_) {
        auto copy = std::make_shared<const std::vector<std::byte>>(bytes.begin(), bytes.end());
        bytes = *copy;
        keep = std::move(copy);
    }
    // The format's work first: the Sequencer may then have this worker queue the chunks parked
    // behind this one for the hashing threads. The chunk's slot comes back when both are done.
    auto passed = pass_wanted_parts(chunk);
    hash_.add(chunk->source_offset_bytes(), bytes, std::move(keep));
    return passed;
}

// The format sees only its own plan's bytes: whole chunks where they lie inside one of its
// ranges, parts of them (which keep the chunk, and so its slot) elsewhere.
Result<void> SignedFileCheck::pass_wanted_parts(const ChunkPtr& chunk) {
    const std::uint64_t begin = chunk->source_offset_bytes();
    const std::uint64_t end = chunk->source_end_bytes();
    const auto& ranges = inner_plan_.ranges;
    auto range = std::upper_bound(ranges.begin(), ranges.end(), begin,
                                  [](std::uint64_t offset, const ReadRange& r) { return offset < r.end_bytes(); });
    for (; range != ranges.end() && range->offset_bytes < end; ++range) {
        const std::uint64_t part_begin = std::max(begin, range->offset_bytes);
        const std::uint64_t part_end = std::min(end, range->end_bytes());
        if (part_begin == begin && part_end == end) {
            return inner_.process(chunk);
        }
        auto part = std::make_shared<const Chunk>(chunk, part_begin, static_cast<std::size_t>(part_end - part_begin));
        RL_TRY_VOID(inner_.process(part));
    }
    return {};
}

// On a hashing thread, once every byte of the shard is hashed.
void SignedFileCheck::check_shard(std::size_t shard, const Sha256Digest& digest) {
    if (std::memcmp(digest.data(), file_.digests[shard].data(), digest.size()) != 0) {
        record(fail(errc::hash_mismatch, file_.signature_file + ": " + shard_text(file_, shard) +
                                             " does not match its signed SHA-256 (the file changed)"));
    }
}

void SignedFileCheck::record(Error error) {
    std::lock_guard lock(failure_mutex_);
    if (!failure_) {
        failure_ = std::move(error);
        failed_.store(true, std::memory_order_release);
    }
}

Result<void> SignedFileCheck::finish() {
    RL_TRY_VOID(inner_.finish());
    if (failed_.load(std::memory_order_acquire)) {
        std::lock_guard lock(failure_mutex_);
        return *failure_;
    }
    const std::uint64_t hashed_end = hash_.wait(); // the hashing threads may still hold the last chunks
    if (failed_.load(std::memory_order_acquire)) {
        std::lock_guard lock(failure_mutex_);
        return *failure_;
    }
    if (hashed_end != file_.size_bytes) {
        return fail(errc::hash_mismatch, file_.signature_file + ": " + file_.path + ": only " +
                                             std::to_string(hashed_end) + " of its " +
                                             std::to_string(file_.size_bytes) + " bytes were hashed");
    }
    return {};
}

void SignedFileCheck::abandon() noexcept {
    hash_.abandon(); // and the chunks queued for hashing with it: they hold slots
    inner_.abandon();
}

} // namespace ringload
