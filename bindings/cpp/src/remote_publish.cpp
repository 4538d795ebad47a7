// bindings/cpp/src/remote_publish.cpp
#include "remote_publish.hpp"

#include "ringload/io/s3_upload.hpp"
#include "run_on_loop.hpp"

#include <unistd.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace ringload {

Result<StagingFile> StagingFile::create() {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string path = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") + "/ringload-upload-XXXXXX";
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

Result<std::string> publish_remote(const std::string& local_path, std::string_view uri, const NetworkOptions& options) {
    if (uri.starts_with("s3://")) {
        asio::io_context loop;
        return run_on_loop(loop, upload_s3_object(loop, local_path, std::string(uri), options));
    }
    const std::string scheme(uri.substr(0, uri.find(':')));
    return fail(errc::unsupported,
                std::string(uri) + ": writing to " + scheme + ":// is not available in this version");
}

} // namespace ringload
