// tests/formats/repeated_name_test.cpp
//
// find_repeated_name (formats/repeated_name.hpp), the one check every format's index makes
// for names given twice: it must find the first second sighting in the list's order, tell
// names apart whose hashes meet in the table, and stay silent for a million distinct names.
#include "formats/repeated_name.hpp"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace ringload {
namespace {

std::optional<std::size_t> repeated_in(const std::vector<std::string>& names) {
    return find_repeated_name(names.size(), [&](std::size_t i) { return std::string_view(names[i]); });
}

TEST(RepeatedName, FindsTheFirstSecondSightingInListOrder) {
    EXPECT_EQ(repeated_in({}), std::nullopt);
    EXPECT_EQ(repeated_in({"a"}), std::nullopt);
    EXPECT_EQ(repeated_in({"a", "b", "c"}), std::nullopt);
    EXPECT_EQ(repeated_in({"a", "b", "a"}), 2u);
    // "b" comes back (position 3) before "a" does (position 4).
    EXPECT_EQ(repeated_in({"a", "b", "c", "b", "a"}), 3u);
    EXPECT_EQ(repeated_in({"x", "x"}), 1u);
    EXPECT_EQ(repeated_in({"", "y", ""}), 2u); // an empty name is a name
}

TEST(RepeatedName, DistinctNamesThatShareTheTableStayDistinct) {
    // 100,000 names in a table of 2^18 slots: many share a probe run; none may be taken for
    // another, and one repeat at the very end is still found.
    std::vector<std::string> names;
    for (int i = 0; i < 100000; ++i) {
        names.push_back("model.layers." + std::to_string(i / 64) + ".mlp.experts." + std::to_string(i % 64) + ".w");
    }
    EXPECT_EQ(repeated_in(names), std::nullopt);
    names.push_back(names[12345]);
    EXPECT_EQ(repeated_in(names), 100000u);
}

TEST(RepeatedName, NamesDifferingOnlyAfterANulByteAreDistinct) {
    using namespace std::string_literals;
    EXPECT_EQ(repeated_in({"a\0b"s, "a\0c"s, "a"s}), std::nullopt);
    EXPECT_EQ(repeated_in({"a\0b"s, "a\0b"s}), 1u);
}

} // namespace
} // namespace ringload
