// bindings/cpp/src/signing/model_folder.hpp
//
// A model folder as Model Signing sees it: its files (relative POSIX paths, hidden ones
// included, the ignored paths and everything under them left out, symlinks and special files
// refused), and the byte ranges of them that it hashes (piece_digests.hpp hashes them).
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace ringload {

struct FolderFile {
    std::string name; // relative to the folder, '/'-separated; "." when the model is one file
    std::string path; // to open
    std::uint64_t size_bytes = 0;
};

// `ignored`: relative paths; a file equal to one, or under one, is left out. Sorted as
// model_signing sorts (path components compared one by one).
Result<std::vector<FolderFile>> list_model_files(const std::string& folder, const std::vector<std::string>& ignored);

// The ends of a file's pieces as model_signing cuts them: the whole file (shard_bytes 0, an
// empty file too), or its shards of shard_bytes (an empty file has none).
std::vector<std::uint64_t> piece_ends(std::uint64_t size_bytes, std::uint64_t shard_bytes);

struct ByteRange {
    const FolderFile* file = nullptr;
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
};

} // namespace ringload
