// engine/include/ringload/memory_room.hpp: how much more memory this process may take before
// the kernel's OOM killer ends it, checked before a load allocates (issue #27, part 2).
//
// The least of: the machine's MemAvailable plus free swap, and for every memory cgroup the
// process is in (v1 and v2, each ancestor too, as limits nest) its limit less its usage, its
// file cache counted as room (the kernel reclaims it before it kills). A container limited to
// 2 GB loading a 4 GB tensor is refused with both numbers instead of being killed silently.
//
//     if (auto room = memory_room(); room && need > room->bytes) { ...room->limited_by... }
//
// Thread: any (reads /proc and /sys on each call).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ringload {

struct MemoryRoom {
    std::uint64_t bytes = 0;
    std::string limited_by; // "cgroup memory.max of /kubepods/pod1 (2147483648 bytes)", "MemAvailable"
};

// Where the facts are read from: the real files, or a test's copies of them.
struct MemoryFacts {
    std::string proc_self_cgroup = "/proc/self/cgroup";
    std::string proc_meminfo = "/proc/meminfo";
    std::string cgroup_v1_memory_root = "/sys/fs/cgroup/memory";
    std::string cgroup_v2_roots[2] = {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"};
};

// None where nothing could be read (no /proc): the load goes ahead unchecked.
std::optional<MemoryRoom> memory_room(const MemoryFacts& facts = {});

} // namespace ringload
