// io/src/redis_kind.cpp
//
// redis:// as a registered source: reads through the Redis source, and publishes a finished
// tensorizer file as tensorizer's to_redis keys it.
#include "ringload/io/redis_publish.hpp"
#include "ringload/io/redis_source.hpp"
#include "ringload/io/source_registry.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace ringload {
namespace {

bool is_redis_uri(std::string_view uri) {
    return uri.starts_with("redis://");
}

Task<Result<std::unique_ptr<Source>>> open_redis_uri(asio::io_context& loop, std::string uri,
                                                     const NetworkOptions& network) {
    auto opening = open_redis_source(loop, std::move(uri), network); // the URI may hold a password
    co_return co_await std::move(opening);
}

// The keys tensorizer's to_redis makes of a file: the bytes before the first record (its
// header and index) as "header", then each tensor's header and its data (empty for meta
// tensors) under the tensor's serialized name. A reader reads the keys back to back, so the
// records must follow each other with no gap: true of every file written by tensorizer or by
// us, checked anyway.
Result<std::vector<RedisPiece>> redis_pieces(const std::string& path, const Index& written) {
    struct stat facts {};
    if (::stat(path.c_str(), &facts) != 0) {
        return fail(errc::io_error, path + ": " + std::strerror(errno));
    }
    std::uint64_t position = written.tensors.empty() ? static_cast<std::uint64_t>(facts.st_size)
                                                     : written.tensors.front().record_offset_bytes;
    std::vector<RedisPiece> pieces{{"header", 0, position}};
    for (const TensorInfo& tensor : written.tensors) {
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

// Blocks the loop thread (hiredis's blocking client): a publish runs alone on its loop.
Task<Result<std::string>> publish_redis_keys(asio::io_context&, std::string local_path, std::string uri,
                                             const NetworkOptions& network, const Index& written) {
    RL_CO_TRY(pieces, redis_pieces(local_path, written));
    co_return publish_to_redis(local_path, uri, pieces, network);
}

} // namespace

const SourceKind redis_source{
    .name = "redis",
    .uri_forms = "redis://[USER:PASSWORD@]HOST:PORT/PREFIX",
    .handles = is_redis_uri,
    .options = {},
    .open = open_redis_uri,
    .publish = publish_redis_keys,
    .publishes_any_file = false,
};

} // namespace ringload
