// tests/bindings/slice_runs_test.cpp
//
// slice_element_runs (bindings/cpp/src/slice_runs.hpp) against a brute-force walk of the slice's
// elements in C order: every element from the right storage element, runs maximal, and the run
// counts the issue asks for (a row range is one run, a column slice one per row).
#include "slice_runs.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>

namespace ringload {
namespace {

// The storage element of each output element, walked one by one.
std::vector<std::uint64_t> brute_force(const std::vector<std::uint64_t>& strides, std::uint64_t offset,
                                       const std::vector<SliceRange>& ranges) {
    std::vector<std::uint64_t> out;
    std::vector<std::uint64_t> at;
    for (const auto& range : ranges) {
        if (range.stop == range.start) {
            return out;
        }
        at.push_back(range.start);
    }
    for (;;) {
        std::uint64_t element = offset;
        for (std::size_t k = 0; k < at.size(); ++k) {
            element += at[k] * strides[k];
        }
        out.push_back(element);
        std::size_t k = at.size();
        for (;;) {
            if (k == 0) {
                return out;
            }
            --k;
            if (++at[k] < ranges[k].stop) {
                break;
            }
            at[k] = ranges[k].start;
        }
    }
}

std::vector<std::uint64_t> expand(const std::vector<ElementRun>& runs) {
    std::vector<std::uint64_t> out;
    for (const auto& run : runs) {
        EXPECT_EQ(run.target_element, out.size()) << "runs in output order, without gaps";
        for (std::uint64_t e = 0; e < run.count; ++e) {
            out.push_back(run.source_element + e);
        }
    }
    return out;
}

void expect_maximal(const std::vector<ElementRun>& runs) {
    for (std::size_t k = 1; k < runs.size(); ++k) {
        EXPECT_NE(runs[k - 1].source_element + runs[k - 1].count, runs[k].source_element) << "touching runs merged";
    }
}

void check(const std::vector<std::uint64_t>& strides, std::uint64_t offset, const std::vector<SliceRange>& ranges) {
    const auto runs = slice_element_runs(strides, offset, ranges);
    EXPECT_EQ(expand(runs), brute_force(strides, offset, ranges));
    expect_maximal(runs);
}

TEST(SliceRuns, RowRangeOfCContiguousIsOneRun) {
    const std::vector<std::uint64_t> shape{10, 7, 3};
    const auto runs = slice_element_runs(c_strides(shape), 0, std::vector<SliceRange>{{2, 5}, {0, 7}, {0, 3}});
    ASSERT_EQ(runs.size(), 1U);
    EXPECT_EQ(runs[0], (ElementRun{2 * 21, 0, 3 * 21}));
}

TEST(SliceRuns, ColumnSliceIsOneRunPerRow) {
    const std::vector<std::uint64_t> shape{5, 9};
    const auto runs = slice_element_runs(c_strides(shape), 0, std::vector<SliceRange>{{0, 5}, {2, 6}});
    ASSERT_EQ(runs.size(), 5U);
    for (std::uint64_t row = 0; row < 5; ++row) {
        EXPECT_EQ(runs[row], (ElementRun{row * 9 + 2, row * 4, 4}));
    }
    check(c_strides(shape), 0, {{0, 5}, {2, 6}});
}

TEST(SliceRuns, ZeroDimensionalIsOneElement) {
    const auto runs = slice_element_runs({}, 7, std::vector<SliceRange>{});
    ASSERT_EQ(runs.size(), 1U);
    EXPECT_EQ(runs[0], (ElementRun{7, 0, 1}));
}

TEST(SliceRuns, ZeroSizeHasNoRuns) {
    EXPECT_TRUE(slice_element_runs(c_strides(std::vector<std::uint64_t>{4, 0, 3}), 0,
                                   std::vector<SliceRange>{{0, 4}, {0, 0}, {0, 3}})
                    .empty());
    EXPECT_TRUE(
        slice_element_runs(c_strides(std::vector<std::uint64_t>{4, 5}), 0, std::vector<SliceRange>{{2, 2}, {0, 5}})
            .empty());
}

TEST(SliceRuns, StridedViewsWithStorageOffset) {
    check({1, 6}, 3, {{1, 5}, {0, 3}});             // a transposed 6x4 view: one element per run
    check({12, 1, 4}, 5, {{0, 2}, {1, 3}, {0, 3}}); // permuted dims
    check({0, 1}, 2, {{0, 3}, {1, 4}});             // expanded: rows repeat the same elements
    check({2}, 1, {{0, 5}});                        // stepped
}

TEST(SliceRuns, RandomShapesAgainstTheWalk) {
    std::mt19937 random(24);
    for (int trial = 0; trial < 2000; ++trial) {
        const std::size_t rank = random() % 5;
        std::vector<std::uint64_t> shape;
        std::vector<SliceRange> ranges;
        for (std::size_t k = 0; k < rank; ++k) {
            shape.push_back(random() % 6);
            const std::uint64_t a = shape.back() == 0 ? 0 : random() % (shape.back() + 1);
            const std::uint64_t b = shape.back() == 0 ? 0 : random() % (shape.back() + 1);
            ranges.push_back({std::min(a, b), std::max(a, b)});
        }
        std::vector<std::uint64_t> strides = c_strides(shape);
        if (trial % 2 == 1) {
            std::shuffle(strides.begin(), strides.end(), random); // a permuted view
        }
        check(strides, random() % 10, ranges);
    }
}

TEST(SliceRuns, CheckSliceNamesTheDimension) {
    const std::vector<std::uint64_t> shape{4, 5};
    EXPECT_TRUE(check_slice(shape, std::vector<SliceRange>{{0, 4}, {5, 5}}, "t").has_value());
    auto past = check_slice(shape, std::vector<SliceRange>{{0, 4}, {2, 6}}, "m.tensors: tensor 'w'");
    ASSERT_FALSE(past.has_value());
    EXPECT_EQ(past.error().detail,
              "m.tensors: tensor 'w': dimension 1 has 5 elements; the range [2, 6) is not within it");
    auto backwards = check_slice(shape, std::vector<SliceRange>{{3, 1}, {0, 5}}, "t");
    EXPECT_FALSE(backwards.has_value());
    auto rank = check_slice(shape, std::vector<SliceRange>{{0, 4}}, "t");
    ASSERT_FALSE(rank.has_value());
    EXPECT_EQ(rank.error().detail, "t: a slice needs one range per dimension (2), got 1");
}

TEST(SliceRuns, CopyRunsGathers) {
    std::vector<std::uint16_t> source(20);
    for (std::size_t k = 0; k < source.size(); ++k) {
        source[k] = static_cast<std::uint16_t>(k);
    }
    const auto runs =
        slice_element_runs(c_strides(std::vector<std::uint64_t>{4, 5}), 0, std::vector<SliceRange>{{1, 3}, {1, 3}});
    std::vector<std::uint16_t> out(4);
    copy_runs(reinterpret_cast<std::byte*>(out.data()), reinterpret_cast<const std::byte*>(source.data()), runs, 2);
    EXPECT_EQ(out, (std::vector<std::uint16_t>{6, 7, 11, 12}));
}

// Deserializer::load_slices through the C++ API on a tensorizer fixture: every tensor's last
// two-thirds of rows against the same cut of its whole load, all in one call that reads less.
TEST(LoadSlices, RowSlicesOfAFixtureMatchTheWholeLoad) {
    auto opened = Deserializer::open(std::string(RINGLOAD_TEST_DATA_DIR) + "/tensorizer/large_mixed_v2.tensors");
    ASSERT_TRUE(opened.has_value()) << opened.error().message();
    auto whole = opened->load();
    ASSERT_TRUE(whole.has_value()) << whole.error().message();
    std::vector<SliceRequest> requests;
    for (std::size_t i = 0; i < opened->index().tensors.size(); ++i) {
        const TensorInfo& tensor = opened->index().tensors[i];
        SliceRequest request{i, {}};
        for (std::size_t k = 0; k < tensor.shape.size(); ++k) {
            request.ranges.push_back({k == 0 ? tensor.shape[0] / 3 : 0, tensor.shape[k]});
        }
        requests.push_back(std::move(request));
    }
    auto sliced = opened->load_slices(requests);
    ASSERT_TRUE(sliced.has_value()) << sliced.error().message();
    ASSERT_EQ(sliced->tensors.size(), requests.size());
    EXPECT_LT(sliced->bytes_read, whole->bytes_read);
    for (std::size_t r = 0; r < requests.size(); ++r) {
        const LoadedTensor& full = whole->tensors[r];
        const auto runs = slice_element_runs(c_strides(full.info.shape), 0, requests[r].ranges);
        std::vector<std::byte> want(sliced->tensors[r].bytes.size());
        copy_runs(want.data(), full.bytes.data(), runs, itemsize(full.info.dtype));
        EXPECT_EQ(sliced->tensors[r].info.shape, slice_shape(requests[r].ranges)) << full.info.name;
        EXPECT_TRUE(std::equal(want.begin(), want.end(), sliced->tensors[r].bytes.begin())) << full.info.name;
    }
}

TEST(LoadSlices, ABadRequestNamesTheFileAndTensor) {
    const std::string path = std::string(RINGLOAD_TEST_DATA_DIR) + "/tensorizer/large_mixed_v2.tensors";
    auto opened = Deserializer::open(path);
    ASSERT_TRUE(opened.has_value());
    const std::vector<SliceRequest> past{{0, {{0, 4}, {0, 251}}}};
    auto refused = opened->load_slices(past);
    ASSERT_FALSE(refused.has_value());
    EXPECT_EQ(refused.error().detail, path +
                                          ": tensor 'model.layers.0.block_0.float16': dimension 1 has 250 "
                                          "elements; the range [0, 251) is not within it");
    const std::vector<SliceRequest> missing{{1000, {}}};
    EXPECT_FALSE(opened->load_slices(missing).has_value());
}

} // namespace
} // namespace ringload
