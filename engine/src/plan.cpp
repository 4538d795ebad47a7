// engine/src/plan.cpp
#include "ringload/engine/plan.hpp"

namespace ringload {

std::uint64_t Plan::total_bytes() const noexcept {
    std::uint64_t total = 0;
    for (const auto& range : ranges) {
        total += range.length_bytes;
    }
    return total;
}

} // namespace ringload
