// io/include/ringload/io/object_cache.hpp
//
// A node-local cache of remote objects (NetworkOptions::cache_dir): a load from any registered
// source keeps the bytes it reads in an entry under the directory as they stream through (no
// second read), keyed by the URI and the object's version (Source::version: size and ETag or
// Last-Modified over HTTP and the object stores; a digest of the keys and the head for Redis),
// and a later load of the same version reads the entry at the local disk's speed (O_DIRECT,
// as a local file), asking the server only whether the object changed (one HEAD;
// cache_validate false: not even that).
//
//     NetworkOptions network;
//     network.cache_dir = "/var/cache/ringload";
//     RL_TRY(source, run_on_loop(loop, open_cached_source(loop, *source_for(uri), uri, network)));
//
// What a load may trust: only blocks (64 KiB) that a finished fill listed in a map, for the
// object's current version, and whose CRC32 matches as they are read; a block that does not
// is read from the server again (and rewritten). Slices and a read-once group's shares keep
// what they read, so entries may be sparse: a load reads the blocks an entry holds from it and
// the rest from the server, filling them in. Several processes may use an entry at once: each
// block is filled by one of them (an OFD lock claims it), the others read those bytes from the
// server. Whatever goes wrong with the cache (a full disk, the size limit, an entry another
// load holds for an older version) is a warning on stderr and an uncached load, never a
// failure. Entries: cache_entry.hpp.
// Thread: the loop thread.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/io/network_options.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>

namespace ringload {

struct SourceKind;

// The source `kind` opens for `uri`, behind network.cache_dir's entry for it (the source itself
// when cache_dir is empty).
Task<Result<std::unique_ptr<Source>>> open_cached_source(asio::io_context& loop, const SourceKind& kind,
                                                         std::string uri, NetworkOptions network);

} // namespace ringload
