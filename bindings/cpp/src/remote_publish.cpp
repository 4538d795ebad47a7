// bindings/cpp/src/remote_publish.cpp
#include "remote_publish.hpp"

#include "formats/tensorizer/reader.hpp"
#include "ringload/io/file_source.hpp"
#include "ringload/io/redis_publish.hpp"
#include "ringload/io/s3_upload.hpp"
#include "run_on_loop.hpp"

#include <boost/asio/io_context.hpp>

#include <signal.h>
#include <unistd.h>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

namespace ringload {
namespace {

// The keys tensorizer's to_redis makes of a file: bytes [0, 73 + index_len) as "header", then
// each tensor's header and its data (empty for meta tensors) under the tensor's serialized
// name. A reader reads the keys back to back, so the records must follow each other with no
// gap: true of every file written by tensorizer or by us, checked anyway.
Result<std::vector<RedisPiece>> redis_pieces(const std::string& path) {
    asio::io_context loop{1};
    RL_TRY(source, open_file_source(loop, path));
    RL_TRY(index, run_on_loop(loop, tensorizer::read_index(*source)));
    constexpr std::uint64_t index_length_offset = 65;
    std::array<std::byte, 8> field{};
    RL_TRY_VOID(run_on_loop(loop, read_exactly_at(*source, index_length_offset, field)));
    std::uint64_t index_length = 0;
    for (std::size_t i = 0; i < field.size(); ++i) {
        index_length |= static_cast<std::uint64_t>(field[i]) << (8 * i);
    }
    std::uint64_t position = index_length_offset + field.size() + index_length;
    std::vector<RedisPiece> pieces{{"header", 0, position}};
    for (const TensorInfo& tensor : index.tensors) {
        if (tensor.record_offset_bytes != position) {
            return fail(errc::format_error, path + ": tensor '" + tensor.display_name() + "' starts at byte " +
                                                std::to_string(tensor.record_offset_bytes) + ", not " +
                                                std::to_string(position) + ": redis:// needs the records back to back");
        }
        pieces.push_back(
            {tensor.name, tensor.record_offset_bytes, tensor.data_offset_bytes - tensor.record_offset_bytes});
        pieces.push_back({tensor.name, tensor.data_offset_bytes, tensor.data_length_bytes});
        position = tensor.data_offset_bytes + tensor.data_length_bytes;
    }
    return pieces;
}

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

Result<std::string> publish_remote(const std::string& local_path, std::string_view uri, const NetworkOptions& options) {
    if (uri.starts_with("s3://")) {
        asio::io_context loop;
        return run_on_loop(loop, upload_s3_object(loop, local_path, std::string(uri), options));
    }
    if (uri.starts_with("redis://")) {
        RL_TRY(pieces, redis_pieces(local_path));
        return publish_to_redis(local_path, uri, pieces, options);
    }
    const std::string scheme(uri.substr(0, uri.find(':')));
    return fail(errc::unsupported,
                std::string(uri) + ": writing to " + scheme + ":// is not available in this version");
}

} // namespace ringload
