// tests/bindings/slice_runs_test.cpp
//
// slice_element_runs (bindings/cpp/src/load/slice_runs.hpp) against a brute-force walk of the slice's
// elements in C order: every element from the right storage element, runs maximal, and the run
// counts the issue asks for (a row range is one run, a column slice one per row); and
// Deserializer::load_slices on a fixture written by the real tensorizer against the bytes its
// manifest says each tensor has.
#include "load/slice_runs.hpp"
#include "../support/test_support.hpp"
#include "ringload/engine/hashes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
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

// Deserializer::load_slices through the C++ API on a fixture written by the real tensorizer: every
// tensor's last two-thirds of rows against the same cut of the tensor's bytes as tensorizer wrote
// them (read from the file at the manifest's data_offset, checked against the manifest's sha256),
// all in one call that reads less than the whole load.
TEST(LoadSlices, RowSlicesOfAFixtureMatchItsManifest) {
    const std::filesystem::path path = testing::tensorizer_dir() / "large_mixed_v2.tensors";
    const nlohmann::json manifest = testing::read_json(path.string() + ".json");
    ASSERT_TRUE(manifest["encryption"].is_null()) << "the file's bytes are the tensors' bytes only unencrypted";
    const std::vector<std::byte> file = testing::read_file(path);
    ASSERT_EQ(file.size(), manifest["file_size"].get<std::uint64_t>());
    auto opened = Deserializer::open(path.string());
    ASSERT_TRUE(opened.has_value()) << opened.error().message();
    const nlohmann::json& expected = manifest["tensors"];
    ASSERT_EQ(opened->index().tensors.size(), expected.size());
    std::vector<SliceRequest> requests;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        ASSERT_EQ(testing::hex_of(opened->index().tensors[i].name),
                  expected[i]["serialized_name_hex"].get<std::string>())
            << "tensor " << i << " in the file's order";
        const auto shape = expected[i]["shape"].get<std::vector<std::uint64_t>>();
        SliceRequest request{i, {}};
        for (std::size_t k = 0; k < shape.size(); ++k) {
            request.ranges.push_back({k == 0 ? shape[0] / 3 : 0, shape[k]});
        }
        requests.push_back(std::move(request));
    }
    auto sliced = opened->load_slices(requests);
    ASSERT_TRUE(sliced.has_value()) << sliced.error().message();
    ASSERT_EQ(sliced->tensors.size(), requests.size());
    for (std::size_t r = 0; r < requests.size(); ++r) {
        const nlohmann::json& want = expected[r];
        const std::string name = want["serialized_name_hex"].get<std::string>();
        ASSERT_FALSE(want["is_meta"].get<bool>()) << name;
        const auto shape = want["shape"].get<std::vector<std::uint64_t>>();
        const auto offset = want["data_offset"].get<std::uint64_t>();
        const auto length = want["byte_length"].get<std::uint64_t>();
        const auto itemsize = want["itemsize"].get<std::size_t>();
        ASSERT_LE(offset + length, file.size()) << name;
        const std::span<const std::byte> stored(file.data() + offset, length);
        ASSERT_EQ(to_hex(sha256(stored)), want["sha256"].get<std::string>()) << name << ": the bytes tensorizer loads";
        const auto runs = slice_element_runs(c_strides(shape), 0, requests[r].ranges);
        std::uint64_t elements = 1;
        for (const auto extent : slice_shape(requests[r].ranges)) {
            elements *= extent;
        }
        std::vector<std::byte> cut(elements * itemsize);
        copy_runs(cut.data(), stored.data(), runs, itemsize);
        EXPECT_EQ(sliced->tensors[r].info.shape, slice_shape(requests[r].ranges)) << name;
        ASSERT_EQ(sliced->tensors[r].bytes.size(), cut.size()) << name;
        EXPECT_TRUE(std::equal(cut.begin(), cut.end(), sliced->tensors[r].bytes.begin())) << name;
    }
    // Reads less than the whole load of the same file.
    auto whole = opened->load();
    ASSERT_TRUE(whole.has_value()) << whole.error().message();
    EXPECT_LT(sliced->bytes_read, whole->bytes_read);
}

// SliceRequest::destination: each slice (a column cut of every tensor) is read straight into
// the caller's memory, between guard bytes that must stay as they were; the result's tensors
// point there, and the bytes equal the same cut of what tensorizer wrote. Through the ring
// (O_DIRECT) and copied from the file's mapping (buffered: a file in the page cache).
class SlicesIntoCallerMemory : public ::testing::TestWithParam<ReadMode> {};

TEST_P(SlicesIntoCallerMemory, ColumnCutsOfEveryTensor) {
    const std::filesystem::path path = testing::tensorizer_dir() / "large_mixed_v2.tensors";
    const nlohmann::json manifest = testing::read_json(path.string() + ".json");
    const std::vector<std::byte> file = testing::read_file(path);
    OpenOptions open_options;
    open_options.read_mode = GetParam();
    auto opened = Deserializer::open(path.string(), open_options);
    ASSERT_TRUE(opened.has_value()) << opened.error().message();
    const nlohmann::json& expected = manifest["tensors"];
    constexpr std::size_t guard = 64;
    constexpr std::byte guard_byte{0xA5};
    std::vector<SliceRequest> requests;
    std::vector<std::vector<std::byte>> expected_cuts;
    std::vector<std::vector<std::byte>> buffers;
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto shape = expected[i]["shape"].get<std::vector<std::uint64_t>>();
        SliceRequest request{i, {}};
        for (std::size_t k = 0; k < shape.size(); ++k) {
            request.ranges.push_back({k + 1 == shape.size() ? shape[k] / 2 : 0, shape[k]});
        }
        const auto itemsize = expected[i]["itemsize"].get<std::size_t>();
        const std::span<const std::byte> stored(file.data() + expected[i]["data_offset"].get<std::uint64_t>(),
                                                expected[i]["byte_length"].get<std::uint64_t>());
        std::uint64_t elements = 1;
        for (const auto extent : slice_shape(request.ranges)) {
            elements *= extent;
        }
        std::vector<std::byte> cut(elements * itemsize);
        copy_runs(cut.data(), stored.data(), slice_element_runs(c_strides(shape), 0, request.ranges), itemsize);
        expected_cuts.push_back(std::move(cut));
        buffers.emplace_back(guard + elements * itemsize + guard, guard_byte);
        requests.push_back(std::move(request));
    }
    for (std::size_t r = 0; r < requests.size(); ++r) {
        requests[r].destination = buffers[r].data() + guard;
    }
    auto sliced = opened->load_slices(requests);
    ASSERT_TRUE(sliced.has_value()) << sliced.error().message();
    for (std::size_t r = 0; r < requests.size(); ++r) {
        const std::string name = expected[r]["serialized_name_hex"].get<std::string>();
        const auto& buffer = buffers[r];
        EXPECT_EQ(sliced->tensors[r].bytes.data(), buffer.data() + guard) << name << ": the result points at it";
        EXPECT_TRUE(std::equal(expected_cuts[r].begin(), expected_cuts[r].end(), buffer.begin() + guard)) << name;
        EXPECT_TRUE(std::all_of(buffer.begin(), buffer.begin() + guard, [&](std::byte b) { return b == guard_byte; }))
            << name << ": bytes before the destination written";
        EXPECT_TRUE(std::all_of(buffer.end() - guard, buffer.end(), [&](std::byte b) { return b == guard_byte; }))
            << name << ": bytes after the destination written";
    }
    EXPECT_EQ(sliced->how.find("mapping") != std::string::npos, GetParam() == ReadMode::buffered) << sliced->how;
    LoadOptions on_device;
    on_device.device = "cuda:0";
    EXPECT_FALSE(opened->load_slices(requests, on_device).has_value()) << "caller memory is host memory";
}

INSTANTIATE_TEST_SUITE_P(ReadModes, SlicesIntoCallerMemory, ::testing::Values(ReadMode::direct, ReadMode::buffered));

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
