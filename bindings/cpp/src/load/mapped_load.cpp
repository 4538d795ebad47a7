// bindings/cpp/src/load/mapped_load.cpp
//
// A host load that leaves the tensors in the file's own pages (LoadOptions::placement): the
// wanted range is mapped copy-on-write, the kernel reads it ahead in large requests (a window
// of read_ahead_window_bytes ahead of the tensor being mapped in), and each
// tensor is handed over once its pages are in. No ring, no copy, no zeroed memory of the
// load's own: in a server's conditions (one bound core, a CPU quota, busy cores, cold memory)
// those were what made the arena path slower than safetensors' mapped reads
// (docs/benchmarks.md, "A load in a server's conditions").
#include "formats/registry.hpp"
#include "gpu/device_name.hpp"
#include "load/deserializer_impl.hpp"
#include "load/tensor_handover.hpp"

#include "ringload/host_arena.hpp"
#include "ringload/io/source_registry.hpp"
#include "ringload/placement.hpp"

#include <algorithm>
#include <chrono>
#include <limits>

namespace ringload {

std::optional<std::string> Deserializer::Impl::why_not_mapped(const LoadOptions& options, const LoadLayout& layout,
                                                              int ordinal) const {
    if (ordinal == gpu::cpu_ordinal && local_path.empty()) {
        return "it is not a local file"; // a remote source, or a reader the caller gave
    }
    // What every front end asks before the index is read (ringload/placement.hpp), with what
    // the index says: the format and whether it is encrypted.
    PlacementAsk ask;
    ask.uri = local_path;
    ask.device = ordinal == gpu::cpu_ordinal ? "cpu" : options.device;
    ask.verify_hashes = options.verify_hashes;
    ask.encrypted = index.encrypted;
    ask.signed_file = options.signed_file != nullptr;
    ask.format = std::string(index.format_name());
    if (std::optional<std::string> why_not = why_not_mappable(ask)) {
        return why_not;
    }
    if (layout.tensors.empty()) {
        return "no tensor to load";
    }
    for (const PlannedTensor& planned : layout.tensors) {
        const TensorInfo& stored = index.tensors[planned.index];
        if (planned.converts) {
            return "tensor '" + stored.name + "' converts to another dtype";
        }
        if (planned.given != nullptr) {
            return "the caller gives the tensors' memory (destination)";
        }
        if (stored.data_offset_bytes % itemsize(stored.dtype) != 0) {
            return "tensor '" + stored.name + "' lies at byte " + std::to_string(stored.data_offset_bytes) +
                   ", not a multiple of its element size";
        }
    }
    return std::nullopt;
}

namespace {
// How far ahead of the tensor being read in the kernel is asked to read. The whole range at
// once (1.36 GB) left the load at the mercy of the scheduler: beside two busy processes it
// took 1.7-2.1 s where 256 MiB ahead took 0.92-0.97 s and safetensors 0.94-1.0 s
// (docs/benchmarks.md); a window keeps the disk busy while the tensors in it are mapped in.
constexpr std::size_t read_ahead_window_bytes = 256 << 20;
} // namespace

Result<LoadedModel> Deserializer::Impl::load_mapped(const LoadOptions& options, const LoadLayout& layout) {
    const std::string& path = local_path;
    std::uint64_t begin = std::numeric_limits<std::uint64_t>::max();
    std::uint64_t end = 0;
    for (const PlannedTensor& planned : layout.tensors) {
        const TensorInfo& stored = index.tensors[planned.index];
        begin = std::min(begin, stored.data_offset_bytes);
        end = std::max(end, stored.data_offset_bytes + stored.data_length_bytes);
    }
    auto mapped = HostArena::map_file(path, begin, static_cast<std::size_t>(end - begin), index.source_size_bytes);
    if (!mapped) {
        return with_context(mapped.error(), source_name());
    }
    const std::shared_ptr<HostArena> arena = *mapped;

    LoadedModel model;
    model.arena = arena;
    model.bytes_read = end - begin;
    model.how = "the file's pages, mapped and read ahead by the kernel (no copy)";
    model.tensors.reserve(layout.tensors.size());
    TensorHandover handover(options, "cpu", arena);
    Progress progress{0, model.bytes_read, 0, layout.tensors.size(), 0};
    const auto started = std::chrono::steady_clock::now();
    auto last_report = started;
    std::size_t asked_until = 0; // read_ahead asked for [0, asked_until) of the mapping
    for (std::size_t k = 0; k < layout.tensors.size(); ++k) {
        if (options.cancel != nullptr && options.cancel->cancelled()) {
            return fail(errc::cancelled, source_name() + ": the load was cancelled");
        }
        const PlannedTensor& planned = layout.tensors[k];
        const TensorInfo& stored = index.tensors[planned.index];
        const auto at = static_cast<std::size_t>(stored.data_offset_bytes - begin);
        const std::size_t wanted_until = std::min(
            arena->size_bytes(), at + static_cast<std::size_t>(stored.data_length_bytes) + read_ahead_window_bytes);
        // In steps of a quarter window: one madvise per tensor would cost a million calls for
        // a million tiny tensors.
        if (wanted_until > asked_until &&
            (wanted_until - asked_until >= read_ahead_window_bytes / 4 || wanted_until == arena->size_bytes())) {
            arena->read_ahead(asked_until, wanted_until - asked_until);
            asked_until = wanted_until;
        }
        if (auto read = arena->read_in(at, static_cast<std::size_t>(stored.data_length_bytes)); !read) {
            return with_context(read.error(), source_name());
        }
        model.tensors.push_back({loaded_info(stored, planned), {arena->data() + at, planned.byte_length}, {}});
        model.bytes += planned.byte_length;
        handover.hand_over(k, false, [&] { return model.tensors.back(); });
        if (options.progress) {
            // At most every 20 ms: a million tiny tensors must not mean a million calls.
            const auto now = std::chrono::steady_clock::now();
            progress.bytes_done += stored.data_length_bytes;
            progress.tensors_done = k + 1;
            if (now - last_report >= std::chrono::milliseconds(20) || k + 1 == layout.tensors.size()) {
                progress.seconds = std::chrono::duration<double>(now - started).count();
                options.progress(progress);
                last_report = now;
            }
        }
    }
    return model;
}

} // namespace ringload
