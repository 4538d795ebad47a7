// tests/engine/memory_room_test.cpp
//
// memory_room from copies of /proc and /sys: MemAvailable + SwapFree, a cgroup v1 limit with
// its ancestors, a cgroup v2 memory.max, file cache counted as room, "no limit" values.
#include "ringload/memory_room.hpp"

#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace ringload {
namespace {

namespace fs = std::filesystem;

using testing::write_text;

class MemoryRoomTest : public ::testing::Test {
protected:
    MemoryFacts facts() const {
        MemoryFacts facts;
        facts.proc_self_cgroup = (dir_.path() / "cgroup").string();
        facts.proc_meminfo = (dir_.path() / "meminfo").string();
        facts.cgroup_v1_memory_root = (dir_.path() / "v1").string();
        facts.cgroup_v2_roots[0] = (dir_.path() / "v2").string();
        facts.cgroup_v2_roots[1] = (dir_.path() / "none").string();
        return facts;
    }
    testing::TempDir dir_;
};

TEST_F(MemoryRoomTest, WithoutCgroupLimitsTheMachinesAvailableMemoryAndSwap) {
    write_text(dir_.path() / "meminfo",
               "MemTotal:       24000000 kB\nMemAvailable:   1000 kB\nSwapFree:         24 kB\n");
    write_text(dir_.path() / "cgroup", "4:memory:/\n0::/\n");
    write_text(dir_.path() / "v1/memory.limit_in_bytes", "9223372036854771712\n"); // v1's "no limit"
    write_text(dir_.path() / "v1/memory.usage_in_bytes", "5000\n");
    const auto room = memory_room(facts());
    ASSERT_TRUE(room);
    EXPECT_EQ(room->bytes, 1024u * 1024u);
    EXPECT_NE(room->limited_by.find("MemAvailable"), std::string::npos);
}

TEST_F(MemoryRoomTest, TheTightestCgroupV1AncestorCountsAndItsFileCacheIsRoom) {
    write_text(dir_.path() / "meminfo", "MemAvailable:   20000000 kB\n");
    write_text(dir_.path() / "cgroup", "9:name=systemd:/\n4:cpu,memory:/pods/pod1\n");
    write_text(dir_.path() / "v1/pods/pod1/memory.limit_in_bytes", "4000000000\n");
    write_text(dir_.path() / "v1/pods/pod1/memory.usage_in_bytes", "1000000000\n");
    write_text(dir_.path() / "v1/pods/memory.limit_in_bytes", "2000000000\n"); // the parent is tighter
    write_text(dir_.path() / "v1/pods/memory.usage_in_bytes", "1500000000\n");
    write_text(dir_.path() / "v1/pods/memory.stat",
               "cache 1\ntotal_inactive_file 300000000\ntotal_active_file 200000000\n");
    const auto room = memory_room(facts());
    ASSERT_TRUE(room);
    EXPECT_EQ(room->bytes, 1000000000u); // 2e9 - (1.5e9 - 0.5e9 of file cache)
    EXPECT_NE(room->limited_by.find("/pods's memory.limit_in_bytes of 2000000000"), std::string::npos)
        << room->limited_by;
}

TEST_F(MemoryRoomTest, CgroupV2MemoryMaxAndItsMaxMeaningNone) {
    write_text(dir_.path() / "meminfo", "MemAvailable:   20000000 kB\n");
    write_text(dir_.path() / "cgroup", "0::/kubepods/burstable/pod9\n");
    write_text(dir_.path() / "v2/kubepods/burstable/pod9/memory.max", "2147483648\n");
    write_text(dir_.path() / "v2/kubepods/burstable/pod9/memory.current", "1073741824\n");
    write_text(dir_.path() / "v2/kubepods/burstable/pod9/memory.stat", "anon 900000000\nfile 73741824\n");
    write_text(dir_.path() / "v2/kubepods/memory.max", "max\n");
    write_text(dir_.path() / "v2/kubepods/memory.current", "99999999999\n");
    const auto room = memory_room(facts());
    ASSERT_TRUE(room);
    EXPECT_EQ(room->bytes, 2147483648u - (1073741824u - 73741824u));
    EXPECT_NE(room->limited_by.find("memory.max of 2147483648 bytes"), std::string::npos) << room->limited_by;
}

TEST_F(MemoryRoomTest, NothingReadableMeansNoAnswer) {
    EXPECT_FALSE(memory_room(facts()));
}

} // namespace
} // namespace ringload
