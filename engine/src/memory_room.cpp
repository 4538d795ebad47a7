// engine/src/memory_room.cpp
#include "ringload/memory_room.hpp"

#include "cgroup_files.hpp"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

namespace ringload {
namespace {

using cgroup::number_file;
using cgroup::number_in;
using cgroup::read_text;

// A "key value" line of /proc/meminfo (kB) or a cgroup's memory.stat (bytes).
std::optional<std::uint64_t> keyed(const std::string& text, std::string_view key) {
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        std::string_view view(line);
        if (view.starts_with(key) && view.size() > key.size() && (view[key.size()] == ' ' || view[key.size()] == ':')) {
            view.remove_prefix(key.size() + 1);
            while (!view.empty() && view.front() == ' ') {
                view.remove_prefix(1);
            }
            view = view.substr(0, view.find(' '));
            return number_in(view);
        }
    }
    return std::nullopt;
}

void keep_least(std::optional<MemoryRoom>& room, std::uint64_t bytes, std::string limited_by) {
    if (!room || bytes < room->bytes) {
        room = MemoryRoom{bytes, std::move(limited_by)};
    }
}

// One cgroup: limit - usage + file cache, where it has a limit.
void cgroup_room(std::optional<MemoryRoom>& room, const std::string& dir, const std::string& shown,
                 const char* limit_file, const char* usage_file, std::initializer_list<std::string_view> cache_keys) {
    const auto limit = number_file(dir + "/" + limit_file);
    const auto usage = number_file(dir + "/" + usage_file);
    if (!limit || !usage || *limit >= (std::uint64_t{1} << 60)) { // v1 says "no limit" with ~2^63
        return;
    }
    std::uint64_t cache = 0;
    if (const auto stat = read_text(dir + "/memory.stat")) {
        for (std::string_view key : cache_keys) {
            cache += keyed(*stat, key).value_or(0);
        }
    }
    const std::uint64_t used = *usage > cache ? *usage - cache : 0;
    const std::uint64_t left = *limit > used ? *limit - used : 0;
    keep_least(room, left,
               "the memory cgroup " + (shown.empty() ? std::string("/") : shown) + "'s " + limit_file + " of " +
                   std::to_string(*limit) + " bytes, " + std::to_string(used) + " in use");
}

} // namespace

std::optional<MemoryRoom> memory_room(const MemoryFacts& facts) {
    std::optional<MemoryRoom> room;
    if (const auto meminfo = read_text(facts.proc_meminfo)) {
        const auto available = keyed(*meminfo, "MemAvailable");
        if (available) {
            const std::uint64_t swap = keyed(*meminfo, "SwapFree").value_or(0);
            keep_least(room, (*available + swap) * 1024, "MemAvailable + SwapFree of this machine");
        }
    }
    const auto cgroups = read_text(facts.proc_self_cgroup);
    if (!cgroups) {
        return room;
    }
    cgroup::for_each_cgroup(*cgroups, [&](const std::string& controllers, const std::string& path) {
        if (controllers.find(",memory,") != std::string::npos) {
            for (const auto& at : cgroup::with_ancestors(path)) {
                cgroup_room(room, facts.cgroup_v1_memory_root + at, at, "memory.limit_in_bytes",
                            "memory.usage_in_bytes", {"total_inactive_file", "total_active_file"});
            }
        } else if (controllers == ",,") {
            for (const auto& root : facts.cgroup_v2_roots) {
                for (const auto& at : cgroup::with_ancestors(path)) {
                    cgroup_room(room, root + at, at, "memory.max", "memory.current", {"file"});
                }
            }
        }
    });
    return room;
}

} // namespace ringload
