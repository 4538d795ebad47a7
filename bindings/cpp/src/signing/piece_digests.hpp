// bindings/cpp/src/signing/piece_digests.hpp
//
// The SHA-256 of pieces of a model folder's files (each file whole, or its shards), read as a
// load reads them and hashed as a signed load hashes them: `ringload verify`, and the files of
// a signed folder that no load read, at the engine's speed rather than a pread loop's.
//
//   files:    several at once (two per core: the hashing threads run two files' rounds
//             together on a core), each on its own loop, 32 reads in flight between them
//   a file:   read through the engine (io_uring; O_DIRECT unless the file is in the page
//             cache) into its ring's slots, its pieces hashed in order (OrderedPieceHash)
#pragma once

#include "signing/model_folder.hpp"

#include "ringload/error.hpp"

#include <cstddef>
#include <string>
#include <vector>

namespace ringload {

// The SHA-256 (32 raw bytes) of each range, in order. The ranges of one file come together,
// in order and back to back (a file's pieces as model_signing cuts them). `threads` 0: one per
// core; the files read at once are twice that.
Result<std::vector<std::string>> hash_ranges(const std::vector<ByteRange>& ranges, std::size_t threads);

} // namespace ringload
