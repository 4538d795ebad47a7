// ringload/share_plan.hpp
//
// The read-once planners, both here: plan_shares for loads that hand tensors over (each rank
// reads a share of one flat buffer), plan_group_reads for loads into each rank's own
// parameters (each rank reads its own rows where the ranks split a tensor by rows, else one
// rank reads it whole for those that want it). The front ends only move the bytes.
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
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
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

// Read once into each rank's own parameters (tensor parallelism): what each rank's loader wants
// of each tensor, and who reads what.
using GroupBox = std::vector<std::pair<std::uint64_t, std::uint64_t>>; // [start, stop) per dimension

struct GroupTensor {
    std::string name;
    std::vector<std::uint64_t> shape;
    std::uint64_t bytes = 0;
};

struct RankWants {
    std::map<std::string, std::vector<GroupBox>> boxes; // per tensor: the boxes its parameters take
    std::set<std::string> whole;                        // tensors it wants handed over whole
};

struct GroupRead {
    std::string name;
    std::uint32_t reader = 0;         // reads it whole
    std::vector<std::uint32_t> ranks; // want it (the reader sends it to the others)
};

struct GroupReadPlan {
    // Tensors the wanting ranks take as disjoint whole-row ranges (column-parallel weights,
    // vocabulary-parallel embeddings): each reads its own rows straight into its parameters;
    // together they read it once, and nothing moves between them.
    std::vector<std::string> split_by_rows;
    // Any other wanted tensor (replicated ones, column cuts, one a loader computes with, every
    // tensor where `whole_only`), in checkpoint order: read whole by the rank with the fewest
    // such bytes so far (then the lowest rank).
    std::vector<GroupRead> shared;
};

// `checkpoint`: the tensors in one order on every rank; `wants`: one per rank (what each said);
// `whole_only`: every tensor read whole by one rank (an encrypted or verified file: hashes and
// seals cover whole tensors). The plan depends only on its arguments: every rank makes the same.
GroupReadPlan plan_group_reads(std::span<const GroupTensor> checkpoint, std::span<const RankWants> wants,
                               bool whole_only);

} // namespace ringload
