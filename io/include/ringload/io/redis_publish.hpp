// io/include/ringload/io/redis_publish.hpp
//
// Puts a local file into Redis in tensorizer's layout (redis_layout.hpp), all at once: readers
// see the old keys under the prefix or the new ones, never a mix.
//
//     std::vector<RedisPiece> pieces = {{"header", 0, 262217}, {"wte", 262217, 120}, ...};
//     RL_TRY(how, publish_to_redis("/tmp/m.tensors", "redis://127.0.0.1:6379/gpt2", pieces, network));
//     // how == "SET 25 keys on redis 127.0.0.1:6379"
//
//  1. every piece is SET under a temporary prefix ("<prefix>.ringload-tmp-<random>", which a
//     reader of "<prefix>" does not see), its value streamed from the file (bounded memory);
//  2. one MULTI/EXEC deletes the keys under "<prefix>:*" and RENAMEs the temporary keys into
//     place;
//  3. on any failure the temporary keys are deleted (best effort, on a fresh connection).
// Temporary keys are SET with a 24-hour expiry (PERSISTed when renamed into place): a publisher
// killed mid-way leaves keys no reader sees, and Redis drops them within a day. To drop them at
// once: redis-cli --scan --pattern '<prefix>.ringload-tmp-*' | xargs -r redis-cli del
// Connecting is retried (`attempts`, with backoff); every wait has the timeout. A key written
// by someone else between the SCAN for old keys and EXEC survives (Redis cannot WATCH a
// pattern). Blocking (hiredis), for the writer's thread; not for the loop thread.
#pragma once

#include "ringload/error.hpp"
#include "ringload/io/network_options.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace ringload {

// The file's bytes [offset, offset + length) go to the key "<prefix>:<name>:<offset>".
struct RedisPiece {
    std::string name; // raw bytes (tensorizer: the serialized tensor name, or "header")
    std::uint64_t offset_bytes = 0;
    std::uint64_t length_bytes = 0; // 0 is an empty key, as tensorizer writes for meta tensors
};

Result<std::string> publish_to_redis(const std::string& local_path, std::string_view uri,
                                     std::span<const RedisPiece> pieces, const NetworkOptions& options);

} // namespace ringload
