// engine/src/cgroup_files.cpp
#include "cgroup_files.hpp"

#include <charconv>
#include <fstream>
#include <sstream>

namespace ringload::cgroup {

std::optional<std::string> read_text(const std::string& path) {
    std::ifstream file(path);
    if (!file) {
        return std::nullopt;
    }
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
}

std::optional<std::uint64_t> number_in(std::string_view text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
        text.remove_suffix(1);
    }
    std::uint64_t value = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size()) {
        return std::nullopt;
    }
    return value;
}

std::optional<std::uint64_t> number_file(const std::string& path) {
    const auto text = read_text(path);
    return text ? number_in(*text) : std::nullopt;
}

std::vector<std::string> with_ancestors(std::string path) {
    std::vector<std::string> paths;
    while (!path.empty() && path != "/") {
        paths.push_back(path);
        path = path.substr(0, path.rfind('/'));
    }
    paths.emplace_back("");
    return paths;
}

void for_each_cgroup(const std::string& proc_self_cgroup,
                     const std::function<void(const std::string& controllers, const std::string& path)>& each) {
    std::istringstream lines(proc_self_cgroup);
    std::string line;
    while (std::getline(lines, line)) {
        const auto first = line.find(':');
        const auto second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) {
            continue;
        }
        each("," + line.substr(first + 1, second - first - 1) + ",", line.substr(second + 1));
    }
}

} // namespace ringload::cgroup
