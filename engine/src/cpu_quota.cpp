// engine/src/cpu_quota.cpp
#include "ringload/cpu_quota.hpp"

#include "cgroup_files.hpp"

#include <sstream>

namespace ringload {
namespace {

void keep_least(std::optional<CpuQuota>& least, std::uint64_t quota_us, std::uint64_t period_us,
                const std::string& shown, const char* file) {
    if (period_us == 0 || quota_us == 0) {
        return;
    }
    const double cpus = static_cast<double>(quota_us) / static_cast<double>(period_us);
    if (!least || cpus < least->cpus) {
        least = CpuQuota{cpus, "the cpu cgroup " + (shown.empty() ? std::string("/") : shown) + "'s " + file + " (" +
                                   std::to_string(quota_us) + " of " + std::to_string(period_us) + " us)"};
    }
}

// v1: cpu.cfs_quota_us is -1 where there is no limit (not a whole number: skipped).
void v1_quota(std::optional<CpuQuota>& least, const std::string& dir, const std::string& shown) {
    const auto quota = cgroup::number_file(dir + "/cpu.cfs_quota_us");
    const auto period = cgroup::number_file(dir + "/cpu.cfs_period_us");
    if (quota && period) {
        keep_least(least, *quota, *period, shown, "cpu.cfs_quota_us");
    }
}

// v2: cpu.max is "QUOTA PERIOD", QUOTA "max" where there is no limit.
void v2_quota(std::optional<CpuQuota>& least, const std::string& dir, const std::string& shown) {
    const auto text = cgroup::read_text(dir + "/cpu.max");
    if (!text) {
        return;
    }
    std::istringstream words(*text);
    std::string quota;
    std::string period;
    if (words >> quota >> period) {
        const auto quota_us = cgroup::number_in(quota);
        const auto period_us = cgroup::number_in(period);
        if (quota_us && period_us) {
            keep_least(least, *quota_us, *period_us, shown, "cpu.max");
        }
    }
}

} // namespace

std::optional<CpuQuota> cpu_quota(const CpuFacts& facts) {
    const auto cgroups = cgroup::read_text(facts.proc_self_cgroup);
    if (!cgroups) {
        return std::nullopt;
    }
    std::optional<CpuQuota> least;
    cgroup::for_each_cgroup(*cgroups, [&](const std::string& controllers, const std::string& path) {
        if (controllers.find(",cpu,") != std::string::npos) {
            for (const auto& root : facts.cgroup_v1_cpu_roots) {
                for (const auto& at : cgroup::with_ancestors(path)) {
                    v1_quota(least, root + at, at);
                }
            }
        } else if (controllers == ",,") {
            for (const auto& root : facts.cgroup_v2_roots) {
                for (const auto& at : cgroup::with_ancestors(path)) {
                    v2_quota(least, root + at, at);
                }
            }
        }
    });
    return least;
}

} // namespace ringload
