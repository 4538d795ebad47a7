// tests/formats/torch_name_table_test.cpp
//
// NameTable (formats/torch/name_table.hpp): the torch reader's storage-key and record-name
// look-ups. Decimal names take a vector slot, every other name a map; the two must agree on
// what is there, whatever the order of insertion, and a hostile number must not size the vector.
#include "formats/torch/name_table.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ringload::torch_zip {
namespace {

TEST(torchNameTable, FindsDecimalAndOtherNamesUnderTheirHead) {
    NameTable table("data/");
    EXPECT_TRUE(table.insert("data/0", 10));
    EXPECT_TRUE(table.insert("data/7", 17));
    EXPECT_TRUE(table.insert("data.pkl", 1));
    EXPECT_TRUE(table.insert("data/07", 20)); // not canonical: a different name than data/7
    EXPECT_TRUE(table.insert("data/x1", 21));
    EXPECT_TRUE(table.insert("7", 22)); // no head: the map
    EXPECT_EQ(table.find("data/0"), 10u);
    EXPECT_EQ(table.find("data/7"), 17u);
    EXPECT_EQ(table.find("data.pkl"), 1u);
    EXPECT_EQ(table.find("data/07"), 20u);
    EXPECT_EQ(table.find("data/x1"), 21u);
    EXPECT_EQ(table.find("7"), 22u);
    for (const char* absent : {"data/1", "data/", "data/-1", "data/+7", "data/8", "version", "data/007"}) {
        EXPECT_EQ(table.find(absent), NameTable::none) << absent;
    }
}

TEST(torchNameTable, RefusesARepeatedNameInEitherPlace) {
    NameTable table;
    EXPECT_TRUE(table.insert("3", 0));
    EXPECT_FALSE(table.insert("3", 1));
    EXPECT_EQ(table.find("3"), 0u);
    EXPECT_TRUE(table.insert("key", 2));
    EXPECT_FALSE(table.insert("key", 3));
    EXPECT_EQ(table.find("key"), 2u);
}

TEST(torchNameTable, AHugeNumberGoesToTheMapAndStaysFoundAsTheVectorGrows) {
    NameTable table;
    // 999999999 is far past twice the names stored plus 1024: the map holds it.
    EXPECT_TRUE(table.insert("999999999", 5));
    EXPECT_TRUE(table.insert("5000", 6)); // also past the bound at this point
    std::vector<std::string> names;
    for (int i = 0; i < 6000; ++i) {
        names.push_back(std::to_string(i));
    }
    for (int i = 0; i < 6000; ++i) {
        if (i != 5000) {
            EXPECT_TRUE(table.insert(names[static_cast<std::size_t>(i)], static_cast<std::size_t>(100 + i)));
        }
    }
    // "5000" now lies inside the vector's range but was stored in the map: still found, still
    // refused a second time.
    EXPECT_EQ(table.find("5000"), 6u);
    EXPECT_FALSE(table.insert("5000", 7));
    EXPECT_EQ(table.find("999999999"), 5u);
    EXPECT_EQ(table.find("4999"), 5099u);
    EXPECT_EQ(table.find("6000"), NameTable::none);
}

} // namespace
} // namespace ringload::torch_zip
