// formats/tensorizer/reader.hpp
//
// Reads a tensorizer file's index with two small reads: the 73-byte file header, then the
// metadata index. Per-tensor headers are not read here: they arrive with the data (see
// load_graph.hpp), so a whole-file load is one sequential stream.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/engine/task.hpp"
#include "ringload/tensor_info.hpp"

#include <span>

namespace ringload::tensorizer {

// Whether the file starts with "|TZR|", or is so short that it is cut inside those bytes (so
// that the reader, not a "not a tensorizer file" message, says what is missing).
bool has_tensorizer_magic(std::span<const std::byte> first_bytes) noexcept;

Task<Result<Index>> read_index(Source& source);

class KeyResolver;

// Checks that a key may be used on this file (tensorizer's rules, §9.5: not for data versions
// 1-2, not for version 4 without the encrypted flag) and, for a passphrase, derives the key
// from the first encrypted tensor's stored parameters now (one small header read), so that
// loads do not stall on Argon2id.
Task<Result<void>> prepare_keys(Source& source, const Index& index, KeyResolver& keys);

} // namespace ringload::tensorizer
