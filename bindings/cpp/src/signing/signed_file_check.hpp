// bindings/cpp/src/signing/signed_file_check.hpp
//
// A load of one file of a signed model (LoadOptions::signed_file): the run reads the whole
// file, [0, size), hashes every byte in file order (each shard on its own in the shard mode)
// and hands the format's handler only the parts of each chunk its own plan wants.
//
//  file:     [hdr][ tensor a ][pad][ tensor b ][ tensor c ]      (b filtered out)
//  plan:     [================ 0 .. size =================]      read once, in slots
//  hash:     every byte, in order (OrderedPieceHash: chunks finish in any order), on the
//            process's hashing threads (HashStream), beside other files' hashes
//  format:   [hdr]? [ tensor a ]              [ tensor c ]       its own plan's parts only
//
// A digest that differs fails the run at once (process() returns the error from then on) and
// finish(); finish() also fails when some byte was never hashed. Chunks wait for the hash as
// they wait for a tensor's: the ring bounds what is held.
//
// Thread: process() from the workers, in any order; finish() on the loop thread.
#pragma once

#include "signing/ordered_piece_hash.hpp"

#include "ringload/engine/plan.hpp"
#include "ringload/model_signing.hpp"

#include <atomic>
#include <mutex>
#include <optional>

namespace ringload {

class SignedFileCheck final : public ChunkHandler {
public:
    // `inner` and `inner_plan` (the format's) outlive this. Fails when the source's size is
    // not the size the signature was checked against. `copy_for_hash`: the format may change
    // bytes in their slot (a load to a device decrypts and byte-swaps there), so the hash
    // reads a copy taken before it does.
    static Result<std::unique_ptr<SignedFileCheck>> create(ChunkHandler& inner, const Plan& inner_plan,
                                                           const SignedFile& file, std::uint64_t source_bytes,
                                                           bool copy_for_hash);

    const Plan& plan() const noexcept { return plan_; }

    Result<void> process(const ChunkPtr& chunk) override;
    std::vector<ReadRange> in_place_ranges(std::size_t alignment) const override {
        return inner_.in_place_ranges(alignment);
    }
    std::byte* in_place_destination(std::uint64_t offset_bytes) const override {
        return inner_.in_place_destination(offset_bytes);
    }
    Result<void> finish() override;
    void abandon() noexcept override;

    SignedFileCheck(ChunkHandler& inner, const Plan& inner_plan, const SignedFile& file, bool copy_for_hash);

private:
    Result<void> pass_wanted_parts(const ChunkPtr& chunk);
    void check_shard(std::size_t shard, const Sha256Digest& digest);
    void record(Error error);

    ChunkHandler& inner_;
    const Plan& inner_plan_;
    const SignedFile& file_;
    bool copy_for_hash_ = false;
    Plan plan_;

    std::atomic<bool> failed_{false};
    std::mutex failure_mutex_;
    std::optional<Error> failure_;
    // Last: destroyed (its jobs dropped, a running one waited for) before what they touch.
    OrderedPieceHash hash_;
};

} // namespace ringload
