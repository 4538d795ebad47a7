// ringload/placement.hpp
//
// Where a CPU load's tensors land when the caller said "auto", and whether a file's tensors can
// stay in its own pages: one rule for every front end (the engine's loads, safe_open and
// load_file, the loads into vLLM's and SGLang's parameters, transformers' and diffusers' reads),
// so that a new integration asks instead of deciding again.
//
//     PlacementAsk ask{.uri = "/models/m.safetensors", .use = PlacementUse::handed_over};
//     Placement placement = choose_placement(Placement::automatic, ask); // mapped_file when cached
#pragma once

#include "ringload/ringload.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace ringload {

// What becomes of the tensors.
enum class PlacementUse : std::uint8_t {
    handed_over,     // given to the caller (safe_open, transformers, diffusers): they may be the file's pages
    into_parameters, // copied into memory the model has already (vLLM, SGLang), or its parameters re-pointed
};

// What is known of a load before its file's index is read (the load checks each tensor after).
struct PlacementAsk {
    std::string uri;
    std::string device = "cpu";
    PlacementUse use = PlacementUse::handed_over;
    bool verify_hashes = false;
    bool encrypted = false;   // a key was given (or the index says so)
    bool signed_file = false; // verified against a model signature in its read
    // From the file's index where it has been read; else the format is told by the extension.
    std::optional<std::string> format;
};

// Why the file's tensors cannot be left in its pages: the device, a remote source, the format
// (safetensors only: tensorizer data lies at any byte, torch tensors are views of storages),
// verification or a signature (their hashes are of the bytes read, not of pages the file may
// change under), a key. Nothing when they may; a load in Placement::mapped_file checks each
// tensor too (dtype conversion, a destination, an offset not a multiple of its element size).
std::optional<std::string> why_not_mappable(const PlacementAsk& ask);

// `asked`, or for Placement::automatic: Placement::mapped_file where the tensors may stay in the
// file's pages and reading it again through the ring would only copy what memory holds: the
// page cache holds the file, and, for a load into parameters, the process may use one CPU or
// less (there the copies, and the first writes to fresh memory they make, are what the load
// waits for; on more CPUs they run beside the reads; docs/benchmarks.md). Else
// Placement::automatic: the load's arena, or the file's pages where the arena would not fit
// in the memory the process may take (Deserializer::load).
Placement choose_placement(Placement asked, const PlacementAsk& ask);

// The CPUs this process may use: its affinity mask, or fewer where its cgroup's CPU quota
// (cgroup v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us) allows less.
double cpus_available() noexcept;

} // namespace ringload
