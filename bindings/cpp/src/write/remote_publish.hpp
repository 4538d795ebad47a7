// bindings/cpp/src/write/remote_publish.hpp
//
// Puts a finished local file at a remote URI through its source's publish (s3://: multipart
// upload; redis://: tensorizer's key layout; ...). The remote object appears whole or not at
// all where the protocol allows it. Also the staging file that the writer fills first.
#pragma once

#include "ringload/error.hpp"
#include "ringload/io/network_options.hpp"
#include "ringload/io/source_registry.hpp"

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

// Uploads `local_path` to `uri`, which `kind` takes and publishes (SourceKind::publish set);
// says how ("S3 multipart upload, 12 parts of 16 MiB"), for WriteSummary::how.
Result<std::string> publish_remote(const SourceKind& kind, const std::string& local_path, std::string_view uri,
                                   const NetworkOptions& options);

} // namespace ringload
