// bindings/cpp/src/write/remote_publish.cpp
#include "write/remote_publish.hpp"

#include "formats/registry.hpp"
#include "ringload/io/file_source.hpp"
#include "ringload/io/source_registry.hpp"
#include "run_on_loop.hpp"

#include <boost/asio/io_context.hpp>

#include <signal.h>
#include <unistd.h>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace ringload {
namespace {

// Removes the staging files in `directory` of processes that no longer run (killed mid-upload).
void remove_orphaned_staging_files(const std::string& directory) {
    constexpr std::string_view stem = "ringload-upload-";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(directory, ec)) {
        const std::string name = entry.path().filename().string();
        if (!name.starts_with(stem)) {
            continue;
        }
        long long pid = 0;
        const char* digits = name.data() + stem.size();
        const auto [end, parse_ec] = std::from_chars(digits, name.data() + name.size(), pid);
        if (parse_ec != std::errc() || *end != '-' || pid <= 0 || pid == ::getpid()) {
            continue; // not ours, or this process's own
        }
        if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
            ::unlink(entry.path().c_str());
        }
    }
}

} // namespace

Result<StagingFile> StagingFile::create() {
    const char* tmpdir = std::getenv("TMPDIR");
    const std::string directory = tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
    remove_orphaned_staging_files(directory);
    std::string path = directory + "/ringload-upload-" + std::to_string(::getpid()) + "-XXXXXX";
    const int fd = ::mkstemp(path.data());
    if (fd < 0) {
        return fail(errc::io_error, path + ": cannot create the staging file for an upload: " + std::strerror(errno));
    }
    ::close(fd);
    return StagingFile(std::move(path));
}

StagingFile::StagingFile(StagingFile&& other) noexcept : path_(std::move(other.path_)) {
    other.path_.clear();
}

StagingFile::~StagingFile() {
    if (!path_.empty()) {
        ::unlink(path_.c_str());
    }
}

Result<std::string> publish_remote(const SourceKind& kind, const std::string& local_path, std::string_view uri,
                                   const NetworkOptions& options) {
    asio::io_context loop{1};
    RL_TRY(source, open_file_source(loop, local_path));
    RL_TRY(written, run_on_loop(loop, formats::read_any_index(*source)));
    return run_on_loop(loop, kind.publish(loop, local_path, std::string(uri), options, written));
}

} // namespace ringload
