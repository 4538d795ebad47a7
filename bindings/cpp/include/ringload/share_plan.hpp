// ringload/share_plan.hpp
//
// Read once per group: which bytes each of `world_size` ranks reads, and where every tensor's
// bytes come from, for a server that moves them with its own communication (NCCL, MPI, ...).
// The Python package's process_group= load runs this plan over torch.distributed.
//
//     auto plan = ringload::plan_shares(deserializer.index(), wanted, std::nullopt, world_size, {});
//     // every rank: a buffer of plan.total_bytes; tensor k at plan.tensor_offsets[k]
//     for (const auto& round : plan->rounds) {
//         load round.ranks[my_rank].pieces (Deserializer::load_slices) into their buffer ranges;
//         broadcast [round.ranks[r].begin, end) of the buffer from rank r, for every r
//     }
//
// The wanted tensors lie one after another in one flat buffer (64-byte aligned, as loaded:
// after a dtype conversion). The buffer is cut into one share per rank, balanced by bytes; a cut
// may fall between two rows (first dimension) of a tensor that can be split, so a huge tensor
// is read by several ranks. Each share is cut again into rounds of at most round_bytes (a
// tensor that cannot be split and is larger makes a larger round). The plan depends only on
// its arguments: every rank computes the same one.
#pragma once

#include "ringload/dtype.hpp"
#include "ringload/error.hpp"
#include "ringload/tensor_info.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ringload {

struct SharePiece {
    std::size_t position = 0;    // into the wanted list (and tensor_offsets)
    std::size_t tensor = 0;      // into Index::tensors
    bool whole = true;           // the whole tensor, else rows [row_begin, row_end)
    std::uint64_t row_begin = 0; // along the first dimension
    std::uint64_t row_end = 0;   // (a whole tensor: 0 and its first dimension, 0 and 1 for 0-d)
    std::uint64_t buffer_offset = 0;
    std::uint64_t buffer_length = 0;
};

struct RankRound {
    std::uint64_t begin = 0; // the buffer range [begin, end) this rank fills in the round (the
    std::uint64_t end = 0;   // range the others receive from it); begin == end: nothing
    std::vector<SharePiece> pieces;
};

struct ShareRound {
    std::vector<RankRound> ranks; // one per rank
};

struct SharePlan {
    std::vector<std::uint64_t> tensor_offsets; // per wanted tensor, in the buffer
    std::uint64_t total_bytes = 0;
    std::vector<ShareRound> rounds;

    // The bytes rank `rank` fills (its share of the buffer, padding between tensors included).
    std::uint64_t share_bytes(std::uint32_t rank) const noexcept;
};

struct ShareOptions {
    // Whether tensors may be split between rows: not where a row range cannot be read on its
    // own (verify_hashes: a hash covers the whole tensor; encrypted files: a tensor is one
    // sealed message). 0-d and meta tensors are never split.
    bool split_rows = true;
    std::uint64_t round_bytes = 64ull << 20;
};

// `wanted`: indexes into index.tensors, each once. `dtype`: the load's conversion (floating
// tensors become it), which sets each tensor's size in the buffer.
Result<SharePlan> plan_shares(const Index& index, std::span<const std::size_t> wanted, std::optional<DType> dtype,
                              std::uint32_t world_size, const ShareOptions& options = {});

} // namespace ringload
