// engine/include/ringload/cpu_quota.hpp: how much CPU time this process may use, for the
// engine to size its threads by (issue #52, part 4). Kubernetes' CPU limits are CFS quotas, not
// affinity masks: a pod limited to one CPU still sees every core in sched_getaffinity, and a
// load that starts one worker per core there spends its quota in a few milliseconds and waits
// out the rest of each 100 ms period (0.57 s for a 1.27 GB file that taskset -c 0 loaded in ~0.24 s).
//
// The least quota / period of every CPU cgroup the process is in (v1 cpu.cfs_quota_us and
// cpu.cfs_period_us, v2 cpu.max; each ancestor too, as limits nest).
//
//     if (auto quota = cpu_quota()) { threads = std::ceil(quota->cpus); ... quota->limited_by ... }
//
// Thread: any (reads /proc and /sys on each call).
#pragma once

#include <optional>
#include <string>

namespace ringload {

struct CpuQuota {
    double cpus = 0;        // CPUs' worth of time per period, e.g. 1.0 or 0.5
    std::string limited_by; // "the cpu cgroup /kubepods/pod1's cpu.max (100000 of 100000 us)"
};

// Where the facts are read from: the real files, or a test's copies of them.
struct CpuFacts {
    std::string proc_self_cgroup = "/proc/self/cgroup";
    // v1: the cpu controller's mount, alone or with cpuacct (both tried: the least counts).
    std::string cgroup_v1_cpu_roots[2] = {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"};
    std::string cgroup_v2_roots[2] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
};

// None where no cgroup limits the process's CPU time (or nothing could be read).
std::optional<CpuQuota> cpu_quota(const CpuFacts& facts = {});

} // namespace ringload
