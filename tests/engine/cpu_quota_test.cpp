// tests/engine/cpu_quota_test.cpp
//
// cpu_quota from copies of /proc and /sys: no limit (v1's -1, v2's "max"), a v1 quota with its
// ancestors (the tightest counts), the cpu,cpuacct mount, a v2 cpu.max, a half CPU. And the
// real machine's answer agrees with its own files.
#include "ringload/cpu_quota.hpp"
#include "ringload/engine/worker_pool.hpp"

#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <sched.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace ringload {
namespace {

namespace fs = std::filesystem;

using testing::write_text;

class CpuQuotaTest : public ::testing::Test {
protected:
    CpuFacts facts() const {
        CpuFacts facts;
        facts.proc_self_cgroup = (dir_.path() / "cgroup").string();
        facts.cgroup_v1_cpu_roots[0] = (dir_.path() / "cpu").string();
        facts.cgroup_v1_cpu_roots[1] = (dir_.path() / "cpu,cpuacct").string();
        facts.cgroup_v2_roots[0] = (dir_.path() / "v2").string();
        facts.cgroup_v2_roots[1] = (dir_.path() / "none").string();
        return facts;
    }
    testing::TempDir dir_;
};

TEST_F(CpuQuotaTest, NoLimitIsNoQuota) {
    write_text(dir_.path() / "cgroup", "1:cpu:/\n0::/\n");
    write_text(dir_.path() / "cpu/cpu.cfs_quota_us", "-1\n");
    write_text(dir_.path() / "cpu/cpu.cfs_period_us", "100000\n");
    write_text(dir_.path() / "v2/cpu.max", "max 100000\n");
    EXPECT_FALSE(cpu_quota(facts()));
    write_text(dir_.path() / "cgroup", "garbage\n");
    EXPECT_FALSE(cpu_quota(facts()));
}

TEST_F(CpuQuotaTest, TheTightestV1AncestorCounts) {
    write_text(dir_.path() / "cgroup", "3:cpuset:/\n1:cpu:/kubepods/pod1/box\n");
    write_text(dir_.path() / "cpu/cpu.cfs_quota_us", "-1\n");
    write_text(dir_.path() / "cpu/cpu.cfs_period_us", "100000\n");
    write_text(dir_.path() / "cpu/kubepods/pod1/cpu.cfs_quota_us", "100000\n"); // the pod: one CPU
    write_text(dir_.path() / "cpu/kubepods/pod1/cpu.cfs_period_us", "100000\n");
    write_text(dir_.path() / "cpu/kubepods/pod1/box/cpu.cfs_quota_us", "400000\n"); // its container: four
    write_text(dir_.path() / "cpu/kubepods/pod1/box/cpu.cfs_period_us", "100000\n");
    const auto quota = cpu_quota(facts());
    ASSERT_TRUE(quota);
    EXPECT_DOUBLE_EQ(quota->cpus, 1.0);
    EXPECT_EQ(quota->limited_by, "the cpu cgroup /kubepods/pod1's cpu.cfs_quota_us (100000 of 100000 us)");
}

TEST_F(CpuQuotaTest, TheCpuCpuacctMountAndV2CpuMaxAreRead) {
    write_text(dir_.path() / "cgroup", "2:cpu,cpuacct:/a\n");
    write_text(dir_.path() / "cpu,cpuacct/a/cpu.cfs_quota_us", "50000\n");
    write_text(dir_.path() / "cpu,cpuacct/a/cpu.cfs_period_us", "100000\n");
    auto quota = cpu_quota(facts());
    ASSERT_TRUE(quota);
    EXPECT_DOUBLE_EQ(quota->cpus, 0.5);

    write_text(dir_.path() / "cgroup", "0::/kubepods.slice/pod.scope\n");
    write_text(dir_.path() / "v2/kubepods.slice/pod.scope/cpu.max", "150000 100000\n");
    write_text(dir_.path() / "v2/kubepods.slice/cpu.max", "max 100000\n");
    quota = cpu_quota(facts());
    ASSERT_TRUE(quota);
    EXPECT_DOUBLE_EQ(quota->cpus, 1.5);
    EXPECT_NE(quota->limited_by.find("/kubepods.slice/pod.scope's cpu.max"), std::string::npos) << quota->limited_by;
}

TEST(CpuQuota, TheEnginesCoresAreTheMaskCutToTheQuota) {
    cpu_set_t set;
    ASSERT_EQ(::sched_getaffinity(0, sizeof(set), &set), 0);
    std::size_t expected = static_cast<std::size_t>(CPU_COUNT(&set));
    if (const auto quota = cpu_quota()) {
        expected = std::min(expected, std::max<std::size_t>(static_cast<std::size_t>(std::ceil(quota->cpus)), 1));
    }
    EXPECT_EQ(available_cores(), expected);
}

} // namespace
} // namespace ringload
