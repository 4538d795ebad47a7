// bindings/cpp/src/load/slice_runs.cpp
#include "load/slice_runs.hpp"

#include <cstring>

namespace ringload {

std::vector<std::uint64_t> c_strides(std::span<const std::uint64_t> shape) {
    std::vector<std::uint64_t> strides(shape.size(), 1);
    for (std::size_t k = shape.size(); k > 1; --k) {
        strides[k - 2] = strides[k - 1] * shape[k - 1];
    }
    return strides;
}

std::vector<std::uint64_t> slice_shape(std::span<const SliceRange> ranges) {
    std::vector<std::uint64_t> shape;
    shape.reserve(ranges.size());
    for (const auto& range : ranges) {
        shape.push_back(range.stop - range.start);
    }
    return shape;
}

Result<void> check_slice(std::span<const std::uint64_t> shape, std::span<const SliceRange> ranges,
                         const std::string& what) {
    if (ranges.size() != shape.size()) {
        return fail(errc::invalid_argument, what + ": a slice needs one range per dimension (" +
                                                std::to_string(shape.size()) + "), got " +
                                                std::to_string(ranges.size()));
    }
    for (std::size_t k = 0; k < shape.size(); ++k) {
        const SliceRange& range = ranges[k];
        if (range.start > range.stop || range.stop > shape[k]) {
            return fail(errc::invalid_argument, what + ": dimension " + std::to_string(k) + " has " +
                                                    std::to_string(shape[k]) + " elements; the range [" +
                                                    std::to_string(range.start) + ", " + std::to_string(range.stop) +
                                                    ") is not within it");
        }
    }
    return {};
}

std::vector<ElementRun> slice_element_runs(std::span<const std::uint64_t> strides, std::uint64_t storage_offset,
                                           std::span<const SliceRange> ranges) {
    const std::size_t rank = ranges.size();
    std::uint64_t first = storage_offset;
    for (std::size_t k = 0; k < rank; ++k) {
        if (ranges[k].stop == ranges[k].start) {
            return {}; // zero-size
        }
        first += ranges[k].start * strides[k];
    }
    // The innermost dimensions whose elements follow each other in the storage form one run;
    // a dimension of one element may have any stride.
    std::uint64_t run = 1;
    std::size_t outer = rank;
    while (outer > 0) {
        const std::uint64_t length = ranges[outer - 1].stop - ranges[outer - 1].start;
        if (length != 1 && strides[outer - 1] != run) {
            break;
        }
        run *= length;
        --outer;
    }
    // An odometer over the outer dimensions, in C order.
    std::vector<std::uint64_t> at(outer, 0);
    std::vector<ElementRun> runs;
    std::uint64_t source = first;
    std::uint64_t target = 0;
    for (;;) {
        if (!runs.empty() && runs.back().source_element + runs.back().count == source) {
            runs.back().count += run;
        } else {
            runs.push_back({source, target, run});
        }
        target += run;
        std::size_t k = outer;
        while (k > 0) {
            --k;
            if (++at[k] < ranges[k].stop - ranges[k].start) {
                source += strides[k];
                break;
            }
            source -= (at[k] - 1) * strides[k];
            at[k] = 0;
            if (k == 0) {
                return runs;
            }
        }
        if (outer == 0) {
            return runs;
        }
    }
}

void copy_runs(std::byte* out, const std::byte* source, std::span<const ElementRun> runs, std::size_t itemsize) {
    for (const auto& run : runs) {
        std::memcpy(out + run.target_element * itemsize, source + run.source_element * itemsize, run.count * itemsize);
    }
}

} // namespace ringload
