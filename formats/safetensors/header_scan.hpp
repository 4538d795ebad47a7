// formats/safetensors/header_scan.hpp
//
// A fast path for the headers writers make: compact or spaced JSON of plain ASCII names, each
// tensor's entry holding exactly "dtype", "shape" and "data_offsets", "__metadata__" an object
// of plain strings. Read in one pass without building any JSON value (a million tensors in
// well under a second, where even a SAX parse spends seconds on values). Anything outside that
// shape (an escape, a non-ASCII byte, another field, a number that is not a plain unsigned
// integer, a bad token) makes scan_header return nullopt, having called nothing the caller
// must keep: the caller then reads the header with the general parser (for_each_member),
// which gives the usual errors.
//
//     auto scanned = scan_header(text, visitor);   // nullopt: use the general parser
#pragma once

#include "ringload/error.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace ringload::safetensors {

struct ScannedEntry {
    std::string_view name;
    std::string_view dtype;
    std::vector<std::uint64_t> shape;
    std::uint64_t begin_bytes = 0;
    std::uint64_t end_bytes = 0;
};

struct ScanVisitor {
    std::function<Result<void>(ScannedEntry&)> tensor;
    std::function<Result<void>(std::string_view key, std::string_view value)> metadata;
};

// nullopt: not the fast path's shape (what the visitor was given is to be dropped); else
// the first error a visitor returned, or success.
std::optional<Result<void>> scan_header(std::string_view text, const ScanVisitor& visitor);

} // namespace ringload::safetensors
