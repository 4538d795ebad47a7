// bindings/cpp/src/plan/share_plan.cpp
#include "ringload/share_plan.hpp"

#include "ringload/engine/dtype_convert.hpp"
#include "ringload/host_arena.hpp"

#include <algorithm>
#include <string>

namespace ringload {
namespace {

std::uint64_t loaded_bytes(const TensorInfo& info, std::optional<DType> dtype) {
    const DType loaded = dtype && converts(info.dtype, *dtype) ? *dtype : info.dtype;
    return info.numel() * itemsize(loaded);
}

bool splits(const TensorInfo& info, const ShareOptions& options) {
    return options.split_rows && !info.shape.empty() && info.shape[0] > 1 && !info.is_meta;
}

// The positions a cut may fall on: tensor boundaries, and row boundaries inside tensors that
// may be split, found arithmetically (a model's rows number in the millions).
class CutPoints {
public:
    CutPoints(const Index& index, std::span<const std::size_t> wanted, const SharePlan& plan,
              std::optional<DType> dtype, const ShareOptions& options) {
        boundaries_ = {0, plan.total_bytes};
        for (std::size_t k = 0; k < wanted.size(); ++k) {
            const TensorInfo& info = index.tensors[wanted[k]];
            const std::uint64_t length = loaded_bytes(info, dtype);
            const std::uint64_t offset = plan.tensor_offsets[k];
            boundaries_.push_back(offset);
            boundaries_.push_back(offset + length);
            if (length > 0) {
                spans_.push_back({offset, offset + length, splits(info, options) ? length / info.shape[0] : 0});
            }
        }
        std::sort(boundaries_.begin(), boundaries_.end());
        boundaries_.erase(std::unique(boundaries_.begin(), boundaries_.end()), boundaries_.end());
    }

    // The cut point nearest `target` (the lower of two equally near).
    std::uint64_t nearest(std::uint64_t target) const {
        std::vector<std::uint64_t> candidates;
        auto next = std::lower_bound(boundaries_.begin(), boundaries_.end(), target);
        if (next != boundaries_.end()) {
            candidates.push_back(*next);
        }
        if (next != boundaries_.begin()) {
            candidates.push_back(*(next - 1));
        }
        if (const Span* span = splittable_at(target)) {
            const std::uint64_t below = span->begin + (target - span->begin) / span->row * span->row;
            candidates.push_back(below);
            candidates.push_back(std::min(below + span->row, span->end));
        }
        std::uint64_t best = candidates.front();
        for (const std::uint64_t candidate : candidates) {
            const std::uint64_t distance = candidate > target ? candidate - target : target - candidate;
            const std::uint64_t best_distance = best > target ? best - target : target - best;
            if (distance < best_distance || (distance == best_distance && candidate < best)) {
                best = candidate;
            }
        }
        return best;
    }

    // The last cut point at or before `target`.
    std::uint64_t at_or_before(std::uint64_t target) const {
        std::uint64_t best = *(std::upper_bound(boundaries_.begin(), boundaries_.end(), target) - 1);
        if (const Span* span = splittable_at(target)) {
            best = std::max(best, span->begin + (target - span->begin) / span->row * span->row);
        }
        return best;
    }

    // The first cut point after `at` (at < the buffer's end).
    std::uint64_t after(std::uint64_t at) const {
        std::uint64_t next = *std::upper_bound(boundaries_.begin(), boundaries_.end(), at);
        if (const Span* span = splittable_at(at)) {
            next = std::min(next, span->begin + ((at - span->begin) / span->row + 1) * span->row);
        }
        return next;
    }

private:
    struct Span {
        std::uint64_t begin, end, row; // row 0: cannot be split
    };

    // The splittable tensor holding byte `at`, if any (spans are ascending and disjoint).
    const Span* splittable_at(std::uint64_t at) const {
        auto it = std::upper_bound(spans_.begin(), spans_.end(), at,
                                   [](std::uint64_t value, const Span& span) { return value < span.begin; });
        if (it == spans_.begin()) {
            return nullptr;
        }
        --it;
        return at < it->end && it->row != 0 ? &*it : nullptr;
    }

    std::vector<std::uint64_t> boundaries_;
    std::vector<Span> spans_;
};

// The tensors with bytes in [begin, end): whole, or the rows of one a cut splits (begin and
// end are cut points, so a tensor is either inside or cut at a row boundary).
std::vector<SharePiece> pieces_in(const Index& index, std::span<const std::size_t> wanted, const SharePlan& plan,
                                  std::optional<DType> dtype, std::uint64_t begin, std::uint64_t end) {
    std::vector<SharePiece> pieces;
    // Tensors lie in order, so only those from the last one starting at or before `begin` up
    // to `end` can overlap: found by search, not by a walk over the whole model per round.
    const auto& offsets = plan.tensor_offsets;
    std::size_t first =
        static_cast<std::size_t>(std::upper_bound(offsets.begin(), offsets.end(), begin) - offsets.begin());
    first = first > 0 ? first - 1 : 0;
    for (std::size_t k = first; k < wanted.size() && offsets[k] < end; ++k) {
        const TensorInfo& info = index.tensors[wanted[k]];
        const std::uint64_t offset = offsets[k];
        const std::uint64_t length = loaded_bytes(info, dtype);
        const std::uint64_t start = std::max(begin, offset);
        const std::uint64_t stop = std::min(end, offset + length);
        if (length == 0 || start >= stop) {
            continue; // no bytes (nothing to read), or not in this range
        }
        const std::uint64_t rows = info.shape.empty() ? 1 : info.shape[0];
        SharePiece piece{k, wanted[k], true, 0, rows, start, stop - start};
        if (start != offset || stop != offset + length) {
            const std::uint64_t row = length / rows;
            piece.whole = false;
            piece.row_begin = (start - offset) / row;
            piece.row_end = (stop - offset) / row;
        }
        pieces.push_back(piece);
    }
    return pieces;
}

} // namespace

std::uint64_t SharePlan::share_bytes(std::uint32_t rank) const noexcept {
    std::uint64_t bytes = 0;
    for (const ShareRound& round : rounds) {
        if (rank < round.ranks.size()) {
            bytes += round.ranks[rank].end - round.ranks[rank].begin;
        }
    }
    return bytes;
}

Result<SharePlan> plan_shares(const Index& index, std::span<const std::size_t> wanted, std::optional<DType> dtype,
                              std::uint32_t world_size, const ShareOptions& options) {
    if (world_size == 0) {
        return fail(errc::invalid_argument, "a plan of shares needs at least one rank");
    }
    if (options.round_bytes == 0) {
        return fail(errc::invalid_argument, "a round of a plan of shares needs at least one byte");
    }
    std::vector<bool> seen(index.tensors.size(), false);
    SharePlan plan;
    std::uint64_t cursor = 0;
    for (const std::size_t i : wanted) {
        if (i >= index.tensors.size() || seen[i]) {
            return fail(errc::invalid_argument,
                        "tensor index " + std::to_string(i) +
                            (i >= index.tensors.size() ? " is out of range" : " is wanted twice"));
        }
        seen[i] = true;
        cursor = align_tensor_offset(cursor); // 64 bytes, as a load's own arena lays tensors out
        plan.tensor_offsets.push_back(cursor);
        cursor += loaded_bytes(index.tensors[i], dtype);
    }
    plan.total_bytes = cursor;
    const CutPoints points(index, wanted, plan, dtype, options);

    // Shares: cuts near r/world of the bytes, never decreasing.
    std::vector<std::uint64_t> shares;
    for (std::uint32_t r = 0; r < world_size; ++r) {
        // total / world * r + the remainder's part: no overflow for any byte count.
        const std::uint64_t target = plan.total_bytes / world_size * r + plan.total_bytes % world_size * r / world_size;
        shares.push_back(std::max(shares.empty() ? 0 : shares.back(), points.nearest(target)));
    }
    shares.push_back(plan.total_bytes);

    std::vector<std::vector<std::pair<std::uint64_t, std::uint64_t>>> chunks(world_size);
    for (std::uint32_t r = 0; r < world_size; ++r) {
        for (std::uint64_t at = shares[r]; at < shares[r + 1];) {
            std::uint64_t stop = points.at_or_before(std::min(shares[r + 1], at + options.round_bytes));
            if (stop <= at) { // one tensor that cannot be split (or one row) larger than a round
                stop = points.after(at);
            }
            chunks[r].emplace_back(at, stop);
            at = stop;
        }
    }
    std::size_t round_count = 0;
    for (const auto& of_rank : chunks) {
        round_count = std::max(round_count, of_rank.size());
    }
    plan.rounds.resize(round_count);
    for (std::size_t i = 0; i < round_count; ++i) {
        plan.rounds[i].ranks.resize(world_size);
        for (std::uint32_t r = 0; r < world_size; ++r) {
            if (i < chunks[r].size()) {
                auto [begin, end] = chunks[r][i];
                plan.rounds[i].ranks[r] = {begin, end, pieces_in(index, wanted, plan, dtype, begin, end)};
            }
        }
    }
    return plan;
}

} // namespace ringload
