// io/include/ringload/io/redis_source.hpp
//
// A file stored in Redis in tensorizer's layout (redis_layout.hpp) as a Source:
//
//     RL_TRY(source, run_on_loop(loop, open_redis_source(loop, "redis://127.0.0.1:6379/gpt2", network)));
//
// Opening SCANs "<prefix>:*" (glob characters in the prefix escaped), asks every key's STRLEN
// (pipelined) and checks that the keys tile [0, size) with "<prefix>:header:0" among them. A
// read is one request of pipelined GETRANGEs, one per key it touches, each reply read from the
// socket straight into the destination; `connections` requests are in flight at once. A reply
// of another length than the key had at open fails the load ("key ... changed size while
// loading"). Connect errors, resets and timeouts (each wait: timeout_seconds) are retried on
// a fresh connection with exponential backoff and jitter, up to `attempts` tries in all.
// redis://user:password@host/prefix sends AUTH; the password never appears in a message.
// Thread: the loop thread (Asio sockets; no other threads).
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/io/network_options.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>

namespace ringload {

Task<Result<std::unique_ptr<Source>>> open_redis_source(asio::io_context& loop, std::string uri,
                                                        const NetworkOptions& options);

// redis:// in the source registry (source_registry.hpp): reads, and publishing a tensorizer
// file in tensorizer's key layout (redis_publish.hpp).
struct SourceKind;
extern const SourceKind redis_source;

} // namespace ringload
