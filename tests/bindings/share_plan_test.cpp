// tests/bindings/share_plan_test.cpp
//
// plan_shares (ringload/share_plan.hpp): every byte of every wanted tensor is read by exactly
// one rank, in one round, into the place the layout gives it; shares are balanced by bytes
// (within one row where tensors may be split, within one tensor where they may not); rounds
// stay under their size unless one tensor that cannot be split is larger; conversions set the
// sizes; bad arguments are refused. Checked by walking the plan against the index, byte by byte.
#include "ringload/share_plan.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace ringload {
namespace {

TensorInfo tensor(std::string name, DType dtype, std::vector<std::uint64_t> shape, bool meta = false) {
    TensorInfo info;
    info.name = std::move(name);
    info.dtype = dtype;
    info.shape = std::move(shape);
    info.byte_length = info.numel() * itemsize(dtype);
    info.is_meta = meta;
    return info;
}

Index model(std::uint32_t seed) {
    std::mt19937 random(seed);
    Index index;
    index.tensors.push_back(tensor("scalar", DType::float32, {}));
    index.tensors.push_back(tensor("empty", DType::float32, {0, 7}));
    for (int i = 0; i < 12; ++i) {
        const std::uint64_t rows = 1 + random() % 300;
        const std::uint64_t columns = 1 + random() % 500;
        index.tensors.push_back(
            tensor("w" + std::to_string(i), i % 3 == 0 ? DType::float16 : DType::float32, {rows, columns}));
    }
    index.tensors.push_back(tensor("meta", DType::float32, {40, 40}, true));
    index.tensors.push_back(tensor("ids", DType::int64, {333}));
    index.tensors.push_back(tensor("huge", DType::float32, {4000, 257}));
    return index;
}

std::vector<std::size_t> all_of(const Index& index) {
    std::vector<std::size_t> wanted(index.tensors.size());
    for (std::size_t i = 0; i < wanted.size(); ++i) {
        wanted[i] = i;
    }
    return wanted;
}

// Walks the plan: each byte of each tensor covered once, by a piece inside its rank's range,
// at the layout's place; returns the bytes each rank fills.
std::vector<std::uint64_t> check_plan(const Index& index, const std::vector<std::size_t>& wanted, const SharePlan& plan,
                                      std::uint32_t world, const ShareOptions& options,
                                      std::optional<DType> dtype = std::nullopt) {
    std::vector<std::vector<int>> covered(wanted.size());
    std::uint64_t expected_total = 0;
    for (std::size_t k = 0; k < wanted.size(); ++k) {
        const TensorInfo& info = index.tensors[wanted[k]];
        const DType loaded = dtype && info.dtype != DType::int64 ? *dtype : info.dtype;
        const std::uint64_t bytes = info.numel() * itemsize(loaded);
        covered[k].assign(bytes, 0);
        EXPECT_EQ(plan.tensor_offsets[k] % 64, 0u);
        EXPECT_GE(plan.tensor_offsets[k], expected_total);
        expected_total = plan.tensor_offsets[k] + bytes;
    }
    EXPECT_EQ(plan.total_bytes, expected_total);
    std::vector<std::uint64_t> filled(world, 0);
    std::uint64_t previous_end = 0;
    for (std::uint32_t r = 0; r < world; ++r) {
        for (const ShareRound& round : plan.rounds) {
            EXPECT_EQ(round.ranks.size(), world);
            const RankRound& mine = round.ranks[r];
            if (mine.begin == mine.end) {
                continue;
            }
            EXPECT_EQ(mine.begin, previous_end) << "shares follow one another, rank by rank, round by round";
            previous_end = mine.end;
            filled[r] += mine.end - mine.begin;
            const bool single = mine.pieces.size() == 1 &&
                                (mine.pieces[0].whole || mine.pieces[0].row_end - mine.pieces[0].row_begin == 1);
            EXPECT_TRUE(mine.end - mine.begin <= options.round_bytes || single)
                << "a round over its size holds one tensor that cannot be split (or one row)";
            for (const SharePiece& piece : mine.pieces) {
                const TensorInfo& info = index.tensors[piece.tensor];
                EXPECT_EQ(wanted[piece.position], piece.tensor);
                EXPECT_GE(piece.buffer_offset, mine.begin);
                EXPECT_LE(piece.buffer_offset + piece.buffer_length, mine.end);
                const std::uint64_t rows = info.shape.empty() ? 1 : info.shape[0];
                const std::uint64_t row = covered[piece.position].size() / rows;
                if (piece.whole) {
                    EXPECT_EQ(piece.row_begin, 0u);
                    EXPECT_EQ(piece.row_end, rows);
                } else {
                    EXPECT_TRUE(options.split_rows && !info.is_meta && rows > 1) << info.name << " was split";
                    EXPECT_LT(piece.row_begin, piece.row_end);
                    EXPECT_LE(piece.row_end, rows);
                }
                EXPECT_EQ(piece.buffer_offset, plan.tensor_offsets[piece.position] + piece.row_begin * row);
                EXPECT_EQ(piece.buffer_length, (piece.row_end - piece.row_begin) * row);
                for (std::uint64_t b = 0; b < piece.buffer_length; ++b) {
                    ++covered[piece.position][piece.buffer_offset - plan.tensor_offsets[piece.position] + b];
                }
            }
        }
    }
    EXPECT_EQ(previous_end, plan.total_bytes);
    for (std::size_t k = 0; k < wanted.size(); ++k) {
        EXPECT_TRUE(std::all_of(covered[k].begin(), covered[k].end(), [](int n) { return n == 1; }))
            << index.tensors[wanted[k]].name << ": a byte read by no rank or by two";
    }
    return filled;
}

TEST(SharePlan, EveryByteIsReadOnceAndSharesAreBalancedByRows) {
    for (std::uint32_t seed : {1u, 2u, 3u}) {
        const Index index = model(seed);
        const auto wanted = all_of(index);
        for (std::uint32_t world : {1u, 2u, 3u, 4u, 7u}) {
            SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(world) + " ranks");
            const ShareOptions options{true, 256 << 10};
            auto plan = plan_shares(index, wanted, std::nullopt, world, options);
            ASSERT_TRUE(plan) << plan.error().message();
            const auto filled = check_plan(index, wanted, *plan, world, options);
            // Within one row (at most 500 float32 columns here) and the alignment padding of
            // an even split: the huge tensor alone is larger than a share at 7 ranks.
            for (std::uint32_t r = 0; r < world; ++r) {
                EXPECT_LE(filled[r], plan->total_bytes / world + 2 * (500 * 4 + 64)) << "rank " << r;
                EXPECT_EQ(filled[r], plan->share_bytes(r));
            }
        }
    }
}

TEST(SharePlan, WithoutRowSplitsEveryTensorIsReadWholeByOneRank) {
    const Index index = model(4);
    const auto wanted = all_of(index);
    const ShareOptions options{false, 64 << 10};
    auto plan = plan_shares(index, wanted, std::nullopt, 4, options);
    ASSERT_TRUE(plan) << plan.error().message();
    check_plan(index, wanted, *plan, 4, options);
    bool huge_round_seen = false;
    for (const ShareRound& round : plan->rounds) {
        for (const RankRound& mine : round.ranks) {
            for (const SharePiece& piece : mine.pieces) {
                EXPECT_TRUE(piece.whole);
                huge_round_seen |= index.tensors[piece.tensor].name == "huge" && mine.pieces.size() == 1;
            }
        }
    }
    EXPECT_TRUE(huge_round_seen) << "the 4 MB tensor, larger than a round, makes a round of its own";
}

TEST(SharePlan, AConversionSetsTheSizesAndASubsetKeepsItsOrder) {
    const Index index = model(5);
    std::vector<std::size_t> wanted{16, 3, 15, 0}; // huge, w1, ids, scalar
    const ShareOptions options{true, 1 << 20};
    auto plan = plan_shares(index, wanted, DType::bfloat16, 2, options);
    ASSERT_TRUE(plan) << plan.error().message();
    check_plan(index, wanted, *plan, 2, options, DType::bfloat16);
    EXPECT_EQ(plan->tensor_offsets[0], 0u);
    EXPECT_EQ(plan->tensor_offsets[1], (4000u * 257u * 2u + 63) / 64 * 64) << "huge in bfloat16 comes first";
}

TEST(SharePlan, BadArgumentsAreRefusedByName) {
    const Index index = model(6);
    const std::vector<std::size_t> twice{1, 2, 1};
    const std::vector<std::size_t> outside{1, 99};
    const std::vector<std::size_t> one{1};
    EXPECT_NE(plan_shares(index, twice, std::nullopt, 2).error().message().find("tensor index 1 is wanted twice"),
              std::string::npos);
    EXPECT_NE(plan_shares(index, outside, std::nullopt, 2).error().message().find("99 is out of range"),
              std::string::npos);
    EXPECT_NE(plan_shares(index, one, std::nullopt, 0).error().message().find("at least one rank"), std::string::npos);
    auto nothing = plan_shares(index, std::vector<std::size_t>{}, std::nullopt, 3);
    ASSERT_TRUE(nothing);
    EXPECT_EQ(nothing->total_bytes, 0u);
    EXPECT_TRUE(nothing->rounds.empty());
}

} // namespace
} // namespace ringload

// plan_group_reads: read once into each rank's own parameters.
namespace ringload {
namespace {

GroupBox rows(std::uint64_t begin, std::uint64_t end, std::uint64_t columns) {
    return {{begin, end}, {0, columns}};
}

TEST(GroupReads, RowSplitsAreReadByTheirOwnersAndTheRestWholeByTheLeastBusyRank) {
    const std::vector<GroupTensor> checkpoint{{"qkv", {8, 4}, 128}, {"norm", {4}, 16},  {"out", {4, 8}, 128},
                                              {"unwanted", {2}, 8}, {"big", {2}, 1000}, {"cols", {4, 8}, 128}};
    std::vector<RankWants> wants(2);
    wants[0].boxes["qkv"] = {rows(0, 4, 4)};
    wants[1].boxes["qkv"] = {rows(4, 8, 4)};
    wants[0].boxes["norm"] = {{{0, 4}}};
    wants[1].boxes["norm"] = {{{0, 4}}}; // both want every row: replicated, one reads it
    wants[0].whole.insert("out");        // a loader computes with it whole
    wants[1].boxes["out"] = {rows(0, 2, 8)};
    wants[0].boxes["big"] = {{{0, 2}}};
    wants[1].boxes["big"] = {{{0, 2}}};
    wants[0].boxes["cols"] = {{{0, 4}, {0, 4}}}; // column cuts: rows read through
    wants[1].boxes["cols"] = {{{0, 4}, {4, 8}}};
    const GroupReadPlan plan = plan_group_reads(checkpoint, wants, false);
    EXPECT_EQ(plan.split_by_rows, (std::vector<std::string>{"qkv"}));
    ASSERT_EQ(plan.shared.size(), 4U);
    EXPECT_EQ(plan.shared[0].name, "norm");
    EXPECT_EQ(plan.shared[0].reader, 0U); // a tie: the lower rank
    EXPECT_EQ(plan.shared[0].ranks, (std::vector<std::uint32_t>{0, 1}));
    EXPECT_EQ(plan.shared[1].name, "out");
    EXPECT_EQ(plan.shared[1].reader, 1U); // rank 0 reads 16 bytes already
    EXPECT_EQ(plan.shared[2].name, "big");
    EXPECT_EQ(plan.shared[2].reader, 0U); // 16 < 128
    EXPECT_EQ(plan.shared[3].name, "cols");
    EXPECT_EQ(plan.shared[3].reader, 1U); // 1016 > 128
}

TEST(GroupReads, WholeOnlyAndOverlappingRowsShareEveryTensor) {
    const std::vector<GroupTensor> checkpoint{{"qkv", {8, 4}, 128}};
    std::vector<RankWants> wants(2);
    wants[0].boxes["qkv"] = {rows(0, 4, 4)};
    wants[1].boxes["qkv"] = {rows(4, 8, 4)};
    EXPECT_TRUE(plan_group_reads(checkpoint, wants, true).split_by_rows.empty()); // hashes cover whole tensors
    wants[1].boxes["qkv"] = {rows(3, 8, 4)};                                      // row 3 twice
    const GroupReadPlan overlapping = plan_group_reads(checkpoint, wants, false);
    EXPECT_TRUE(overlapping.split_by_rows.empty());
    ASSERT_EQ(overlapping.shared.size(), 1U);
    EXPECT_EQ(overlapping.shared[0].ranks, (std::vector<std::uint32_t>{0, 1}));
}

} // namespace
} // namespace ringload
