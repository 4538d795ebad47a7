// bindings/cpp/src/plan/group_reads.cpp: read once into each rank's own parameters
// (ringload/share_plan.hpp, plan_group_reads).
#include "ringload/share_plan.hpp"

#include <algorithm>
#include <tuple>

namespace ringload {
namespace {

// The box takes every index of each dimension after the first: whole rows, one stretch of
// the tensor's C-order bytes.
bool whole_rows(const GroupBox& box, const std::vector<std::uint64_t>& shape) {
    for (std::size_t d = 1; d < box.size() && d < shape.size(); ++d) {
        if (box[d].first != 0 || box[d].second != shape[d]) {
            return false;
        }
    }
    return true;
}

bool overlap(const GroupBox& a, const GroupBox& b) {
    for (std::size_t d = 0; d < a.size() && d < b.size(); ++d) {
        if (!(a[d].first < b[d].second && b[d].first < a[d].second)) {
            return false;
        }
    }
    return true;
}

// Each wanting rank takes whole rows only, and no two ranks the same ones.
bool split_by_rows(const GroupTensor& tensor, std::span<const RankWants> wants) {
    std::vector<std::pair<std::size_t, const GroupBox*>> boxes;
    for (std::size_t rank = 0; rank < wants.size(); ++rank) {
        if (wants[rank].whole.count(tensor.name) != 0) {
            return false; // one rank wants it handed over whole
        }
        const auto found = wants[rank].boxes.find(tensor.name);
        if (found == wants[rank].boxes.end()) {
            continue;
        }
        for (const GroupBox& box : found->second) {
            if (!whole_rows(box, tensor.shape)) {
                return false;
            }
            boxes.emplace_back(rank, &box);
        }
    }
    for (std::size_t i = 0; i < boxes.size(); ++i) {
        for (std::size_t j = i + 1; j < boxes.size(); ++j) {
            if (boxes[i].first != boxes[j].first && overlap(*boxes[i].second, *boxes[j].second)) {
                return false;
            }
        }
    }
    return true;
}

} // namespace

GroupReadPlan plan_group_reads(std::span<const GroupTensor> checkpoint, std::span<const RankWants> wants,
                               bool whole_only) {
    GroupReadPlan plan;
    std::vector<std::uint64_t> reading(wants.size(), 0); // bytes each rank reads whole for the group
    for (const GroupTensor& tensor : checkpoint) {
        std::vector<std::uint32_t> ranks;
        for (std::uint32_t rank = 0; rank < wants.size(); ++rank) {
            if (wants[rank].boxes.count(tensor.name) != 0 || wants[rank].whole.count(tensor.name) != 0) {
                ranks.push_back(rank);
            }
        }
        if (ranks.empty()) {
            continue;
        }
        if (!whole_only && split_by_rows(tensor, wants)) {
            plan.split_by_rows.push_back(tensor.name);
            continue;
        }
        const std::uint32_t reader = *std::min_element(
            ranks.begin(), ranks.end(),
            [&](std::uint32_t a, std::uint32_t b) { return std::tie(reading[a], a) < std::tie(reading[b], b); });
        reading[reader] += tensor.bytes;
        plan.shared.push_back({tensor.name, reader, std::move(ranks)});
    }
    return plan;
}

} // namespace ringload
