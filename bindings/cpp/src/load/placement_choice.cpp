// bindings/cpp/src/load/placement_choice.cpp: placement "auto" and what can be mapped, one rule
// (ringload/placement.hpp).
#include "ringload/placement.hpp"

#include "formats/registry.hpp"
#include "gpu/device_name.hpp"

#include "ringload/cpu_quota.hpp"
#include "ringload/engine/worker_pool.hpp"
#include "ringload/io/file_source.hpp"
#include "ringload/io/source_registry.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

namespace ringload {
namespace {

bool file_cached(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    struct stat info {};
    const bool cached = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) &&
                        mostly_in_page_cache(fd, static_cast<std::uint64_t>(info.st_size));
    ::close(fd);
    return cached;
}

} // namespace

double cpus_available() noexcept {
    double cpus = static_cast<double>(available_cores());
    try {
        if (const auto quota = cpu_quota()) {
            cpus = std::min(cpus, quota->cpus);
        }
    } catch (...) { // (a string that could not be allocated): the affinity mask stands
    }
    return cpus;
}

std::optional<std::string> why_not_mappable(const PlacementAsk& ask) {
    if (auto ordinal = gpu::parse_device(ask.device); !ordinal || *ordinal != gpu::cpu_ordinal) {
        return "the load is for " + ask.device + ", not the CPU";
    }
    if (source_for(ask.uri) != nullptr) {
        return "it is not a local file";
    }
    const Format* format = ask.format ? formats::named(*ask.format) : &formats::for_target(ask.uri);
    if (format == nullptr || !format->tensors_mappable) {
        // tensorizer data lies at any byte (and its records carry headers the load reads);
        // torch zip tensors are views of storages, loaded through them.
        return "only " + formats::names_text(&Format::tensors_mappable) + " files are mapped, this is " +
               (format == nullptr ? std::string("no such") : "a " + std::string(format->name)) + " file";
    }
    if (ask.encrypted) {
        return "an encrypted file's tensors are decrypted into memory";
    }
    if (ask.verify_hashes) {
        return "verify_hashes reads every byte through the hash stages";
    }
    if (ask.signed_file) {
        return "a signed file's tensors are the bytes its load hashed, not pages the file may change under";
    }
    return std::nullopt;
}

Placement choose_placement(Placement asked, const PlacementAsk& ask) {
    if (asked != Placement::automatic || why_not_mappable(ask)) {
        return asked;
    }
    if (ask.use == PlacementUse::into_parameters && cpus_available() > 1) {
        return Placement::automatic;
    }
    auto path = local_path_of(ask.uri);
    return path && file_cached(*path) ? Placement::mapped_file : Placement::automatic;
}

} // namespace ringload
