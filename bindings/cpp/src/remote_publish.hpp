// bindings/cpp/src/remote_publish.hpp
//
// Puts a finished local tensorizer file at a remote URI: s3:// (multipart upload) or
// redis:// (tensorizer's key layout). The remote object appears whole or not at all where the
// protocol allows it. Also the staging file that the writer fills first.
#pragma once

#include "ringload/error.hpp"
#include "ringload/io/network_options.hpp"

#include <string>
#include <string_view>

namespace ringload {

// A file under $TMPDIR (else /tmp), "ringload-upload-<pid>-XXXXXX", removed when this goes. A
// process killed mid-upload cannot remove its own: create() removes those of processes that
// are gone (the pid in the name no longer runs), so the next upload cleans up after the last.
class StagingFile {
public:
    static Result<StagingFile> create();
    StagingFile(StagingFile&& other) noexcept;
    StagingFile& operator=(StagingFile&&) = delete;
    StagingFile(const StagingFile&) = delete;
    ~StagingFile();
    const std::string& path() const { return path_; }

private:
    explicit StagingFile(std::string path) : path_(std::move(path)) {}
    std::string path_;
};

// Uploads `local_path` to `uri`; says how ("multipart upload, 12 parts"), for WriteSummary::how.
Result<std::string> publish_remote(const std::string& local_path, std::string_view uri, const NetworkOptions& options);

} // namespace ringload
