// engine/src/cgroup_files.hpp: reading the cgroups this process is in (v1 and v2), for the
// limits the engine sizes itself by: memory (memory_room.cpp) and CPU time (cpu_quota.cpp).
//
//     for_each_cgroup(*read_text("/proc/self/cgroup"), [](const std::string& controllers,
//                                                         const std::string& path) { ... });
//
// Thread: plain functions of the files they read.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringload::cgroup {

// A file's whole text; nothing where it cannot be read.
std::optional<std::string> read_text(const std::string& path);

// A whole number (trailing blanks and newline allowed); nothing for anything else ("max": v2's
// "no limit").
std::optional<std::uint64_t> number_in(std::string_view text);
std::optional<std::uint64_t> number_file(const std::string& path);

// The cgroup and its ancestors up to the mount's root, as limits nest: "/a/b" -> "/a/b", "/a", "".
std::vector<std::string> with_ancestors(std::string path);

// Each line of /proc/self/cgroup's text: ",memory," or ",cpu,cpuacct," (v1, commas around) or
// ",," (v2), and the cgroup's path ("4:memory:/a/b", "0::/a/b").
void for_each_cgroup(const std::string& proc_self_cgroup,
                     const std::function<void(const std::string& controllers, const std::string& path)>& each);

} // namespace ringload::cgroup
