// engine/src/memory_backing.cpp
#include "ringload/memory_backing.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace ringload {
namespace {

constexpr unsigned long virtio_id_balloon = 5;
constexpr std::size_t virtio_balloon_f_reporting = 5;

std::string first_line_of(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    return line;
}

} // namespace

bool virtio_balloon_reports_free_pages(const std::string& sysfs_virtio_devices) {
    std::error_code ec;
    for (const auto& device : std::filesystem::directory_iterator(sysfs_virtio_devices, ec)) {
        // `device` holds the id in hex ("0x0005"); `features` one '0'/'1' per feature bit,
        // bit 0 first.
        const std::string id = first_line_of(device.path() / "device");
        if (std::strtoul(id.c_str(), nullptr, 16) != virtio_id_balloon) { // 0 where unreadable
            continue;
        }
        const std::string features = first_line_of(device.path() / "features");
        if (features.size() > virtio_balloon_f_reporting && features[virtio_balloon_f_reporting] == '1') {
            return true;
        }
    }
    return false; // no sysfs, no balloon, or a balloon that does not report: memory stays backed
}

bool fresh_memory_may_wait_for_host() {
    static const bool waits = virtio_balloon_reports_free_pages("/sys/bus/virtio/devices");
    return waits;
}

} // namespace ringload
