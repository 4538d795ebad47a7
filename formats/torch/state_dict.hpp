// formats/torch/state_dict.hpp
//
// Turns the unpickled value tree into the Index's tensors and storages (torch-zip-format.md §9):
// a dict of tensors gives flat names; nested dicts, lists and tuples give a path of keys and
// list indexes (name = the path joined with '.'). Values that are not tensors are skipped. A
// tensor object reached twice appears under each name; tensors naming one storage key share
// one StorageInfo. Every view is bounds-checked against its storage.
#pragma once

#include "formats/torch/pickle_machine.hpp"
#include "formats/torch/state_dict_scan.hpp"
#include "ringload/error.hpp"
#include "ringload/tensor_info.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace ringload::torch_zip {

// The byte length of record data/<key>, or an error if the archive lacks it (or cannot serve it).
using StorageRecordLength = std::function<Result<std::uint64_t>(const std::string& key)>;

struct WalkLimits {
    std::size_t depth_max = 256;                   // nesting of containers
    std::size_t visits_max = std::size_t{1} << 24; // values visited, shared containers counted per path
};

// Fills index.tensors and index.storages. Storage data offsets are left at 0 and each tensor's
// data_offset_bytes/record_offset_bytes are relative to its storage's first byte: the caller,
// who knows where each record's data starts, adds it.
Result<void> collect_tensors(const Value& root, const StorageRecordLength& record_length, Index& index,
                             const WalkLimits& limits = {});

// The same for what scan_state_dict read (a flat dict of tensors): the same Index, checks and
// errors as collect_tensors on the tree the machine builds from that pickle. The caller keeps
// the pickle alive (the scan's names and keys are views into it) and keeps a pickle of more
// tensors than WalkLimits::visits_max on the general path, which refuses it.
Result<void> collect_scanned_tensors(const ScannedStateDict& scanned, const StorageRecordLength& record_length,
                                     Index& index);

} // namespace ringload::torch_zip
