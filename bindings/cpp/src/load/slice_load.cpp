// bindings/cpp/src/load/slice_load.cpp
//
// Deserializer::load_slices: parts of tensors, read as the byte runs they need (slice_runs.hpp),
// every request's runs in ONE plan, so that many slices of many tensors are one pass through
// the ring. Each run is a PlainSpan straight into its place in the result arena:
//
//  file:    [ hdr | tensor a ............ ][ hdr | tensor b ................... ]
//  asked:           [ a rows 2..3 ]                [b r0 cols][b r1 cols][b r2 ]
//  plan:            [ range 0     ]                [ range 1 (dense: merged) ]
//  arena:   [ a[2:4] ][ b[0:3, 4:9] ]
//
// Tensorizer records have headers before their data: a slice reads data only (the index has
// the data offsets). Runs that overlap in the source (a tensor asked twice, torch views that
// share a storage's bytes) are read once into scratch and copied from there. Spans are merged
// only where dense (gaps up to slice_merge_gap_bytes, 64 KiB, where another range would cost
// more than reading the gap): a row range reads exactly its bytes; a column slice reads one
// range per row, or the rows' whole block where they are shorter than that.
//
// Encrypted tensorizer files and verify_hashes: the boxes and the stored hashes cover whole
// tensors, so the covering whole tensors are read through the normal load() and the slices cut
// out of them in memory (that reads the whole tensors). Meta tensors give zeros.
// LoadOptions::dtype converts on the CPU after the read; device="cuda:N" slices on the host
// and uploads the slices (host memory: the slices' size), which keeps one path for all cases,
// into the caller's device memory where a request gives it (a parameter: no device block).
#include "gpu/device_name.hpp"
#include "load/deserializer_impl.hpp"
#include "load/slice_runs.hpp"
#include "ringload/host_arena.hpp"

#include "ringload/io/source_registry.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>

namespace ringload {
namespace {

// Gaps the plan reads through by default: those a whole load reads through too. A range costs
// about as much as reading 64-170 KiB here (executor and request; measured with column slices
// of the 3.1 GB demo, docs/benchmarks.md): an eighth of the columns of every matrix took 7.3 s
// from the disk and 12 s over HTTP with gaps of at most 4 KiB read through (reading 4x the
// slices' bytes), 2.3 s and 3.6 s with 64 KiB (8x; the whole load: 2 s). Row ranges are
// exact either way: the gaps between slices of different tensors are most of a tensor, and
// where they are not, at most 64 KiB (less than a slot) per tensor is read beyond them.
// SliceReadOptions::merge_gap_bytes = 0 reads only the slices' bytes (a metered source).
constexpr std::uint64_t slice_merge_gap_bytes = plain_merge_gap_bytes;

// One request as it is loaded: its output's shape, type and place.
struct SlicePlace {
    std::vector<std::uint64_t> shape;
    std::uint64_t numel = 0;
    DType stored = DType::uint8;
    DType loaded = DType::uint8;
    bool converts = false;
    std::byte* given = nullptr; // SliceRequest::destination, on the host
    std::size_t out_offset = 0; // in the result arena (the host's), where not given
    std::size_t raw_offset = 0; // converting requests: their stored bytes in the raw scratch
    // A device load: the slice is cut on the host (at out_offset) and uploaded to the caller's
    // device memory, or to device_offset in the load's own device block.
    std::byte* device_given = nullptr;
    std::size_t device_offset = 0;
};

struct SliceLayout {
    std::vector<SlicePlace> places; // per request
    std::size_t out_bytes = 0;
    std::size_t raw_bytes = 0;
    std::size_t device_bytes = 0; // the device block: the requests without a destination
};

// A request's output: `given` (the caller's memory), else the next `length` bytes of a block
// now `bytes` long.
void place_output(std::byte* given, std::size_t length, std::byte*& place_given, std::size_t& place_offset,
                  std::size_t& bytes) {
    place_given = given;
    if (given == nullptr) {
        place_offset = bytes;
        bytes = align_tensor_offset(bytes + length);
    }
}

Result<SliceLayout> plan_slices(const Index& index, std::span<const SliceRequest> requests, const LoadOptions& options,
                                bool on_device, const std::string& source) {
    SliceLayout layout;
    for (const auto& request : requests) {
        if (request.tensor_index >= index.tensors.size()) {
            return fail(errc::invalid_argument, source + ": no tensor " + std::to_string(request.tensor_index) +
                                                    " (the file has " + std::to_string(index.tensors.size()) + ")");
        }
        const TensorInfo& tensor = index.tensors[request.tensor_index];
        RL_TRY_VOID(check_slice(tensor.shape, request.ranges, source + ": tensor '" + tensor.display_name() + "'"));
        SlicePlace place;
        place.shape = slice_shape(request.ranges);
        place.numel = 1;
        for (auto extent : place.shape) {
            place.numel *= extent;
        }
        place.stored = place.loaded = tensor.dtype;
        if (options.dtype && converts(tensor.dtype, *options.dtype)) {
            place.converts = true;
            place.loaded = *options.dtype;
            place.raw_offset = layout.raw_bytes;
            layout.raw_bytes = align_tensor_offset(layout.raw_bytes + place.numel * itemsize(place.stored));
        }
        const std::size_t length = place.numel * itemsize(place.loaded);
        if (on_device) { // cut on the host in the arena, uploaded to the destination
            place_output(nullptr, length, place.given, place.out_offset, layout.out_bytes);
            place_output(request.destination, length, place.device_given, place.device_offset, layout.device_bytes);
        } else {
            place_output(request.destination, length, place.given, place.out_offset, layout.out_bytes);
        }
        layout.places.push_back(std::move(place));
    }
    return layout;
}

// Where a request's loaded bytes go: the caller's memory, else the result arena.
std::byte* output_of(const SlicePlace& place, std::byte* out) {
    return place.given != nullptr ? place.given : out + place.out_offset;
}

// Where a request's stored bytes go: the raw scratch when it converts, else its output.
std::byte* stored_destination(const SlicePlace& place, std::byte* out, std::byte* raw) {
    return place.converts ? raw + place.raw_offset : output_of(place, out);
}

// A stretch of source bytes and where it goes.
struct ByteRun {
    std::uint64_t source_offset_bytes = 0;
    std::uint64_t length_bytes = 0;
    std::byte* destination = nullptr;
    std::size_t request = 0;
};

// Every request's runs, in bytes. Meta tensors have none: their outputs are zeroed here.
std::vector<ByteRun> byte_runs(const Index& index, std::span<const SliceRequest> requests, const SliceLayout& layout,
                               std::byte* out, std::byte* raw) {
    std::vector<ByteRun> runs;
    for (std::size_t r = 0; r < requests.size(); ++r) {
        const TensorInfo& tensor = index.tensors[requests[r].tensor_index];
        const SlicePlace& place = layout.places[r];
        const std::size_t size = itemsize(tensor.dtype);
        std::byte* destination = stored_destination(place, out, raw);
        if (tensor.is_meta) {
            std::memset(destination, 0, place.numel * size);
            continue;
        }
        // Storage element 0 in the source, and how the view steps through it.
        std::uint64_t base = tensor.data_offset_bytes;
        std::vector<std::uint64_t> strides = c_strides(tensor.shape);
        std::uint64_t storage_offset = 0;
        if (tensor.storage_index) {
            base = index.storages[*tensor.storage_index].data_offset_bytes;
            if (!tensor.strides.empty()) {
                strides = tensor.strides;
            }
            storage_offset = tensor.storage_offset;
        }
        for (const auto& run : slice_element_runs(strides, storage_offset, requests[r].ranges)) {
            runs.push_back(
                {base + run.source_element * size, run.count * size, destination + run.target_element * size, r});
        }
    }
    return runs;
}

// Source bytes read as one span: one run straight to its place, or overlapping runs read
// into scratch (at scratch_offset) and copied out after the read.
struct ReadGroup {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::size_t first_run = 0; // into the sorted runs
    std::size_t run_count = 0;
    std::size_t scratch_offset = 0;
};

std::vector<ReadGroup> group_runs(std::vector<ByteRun>& runs, std::size_t& scratch_bytes) {
    std::sort(runs.begin(), runs.end(),
              [](const ByteRun& a, const ByteRun& b) { return a.source_offset_bytes < b.source_offset_bytes; });
    std::vector<ReadGroup> groups;
    for (std::size_t k = 0; k < runs.size(); ++k) {
        const ByteRun& run = runs[k];
        const std::uint64_t end = run.source_offset_bytes + run.length_bytes;
        if (!groups.empty() && run.source_offset_bytes < groups.back().end) {
            groups.back().end = std::max(groups.back().end, end);
            ++groups.back().run_count;
            continue;
        }
        groups.push_back({run.source_offset_bytes, end, k, 1, 0});
    }
    scratch_bytes = 0;
    for (auto& group : groups) {
        if (group.run_count > 1) {
            group.scratch_offset = scratch_bytes;
            scratch_bytes = align_tensor_offset(scratch_bytes + (group.end - group.begin));
        }
    }
    return groups;
}

std::vector<PlainSpan> read_spans(const Index& index, std::span<const SliceRequest> requests,
                                  const std::vector<ByteRun>& runs, const std::vector<ReadGroup>& groups,
                                  std::byte* scratch) {
    std::vector<PlainSpan> spans;
    spans.reserve(groups.size());
    for (const auto& group : groups) {
        const ByteRun& first = runs[group.first_run];
        const TensorInfo& tensor = index.tensors[requests[first.request].tensor_index];
        std::byte* destination = group.run_count > 1 ? scratch + group.scratch_offset : first.destination;
        const bool swap = tensor.storage_index.has_value() && index.big_endian;
        spans.push_back({group.begin, group.end - group.begin, destination,
                         "tensor '" + tensor.display_name() + "' (a slice)", tensor.dtype, swap, std::nullopt});
    }
    return spans;
}

void copy_from_scratch(const std::vector<ByteRun>& runs, const std::vector<ReadGroup>& groups,
                       const std::byte* scratch) {
    for (const auto& group : groups) {
        if (group.run_count < 2) {
            continue;
        }
        for (std::size_t k = group.first_run; k < group.first_run + group.run_count; ++k) {
            const ByteRun& run = runs[k];
            std::memcpy(run.destination, scratch + group.scratch_offset + (run.source_offset_bytes - group.begin),
                        run.length_bytes);
        }
    }
}

// The slices out of whole tensors loaded by `whole` (C order, stored dtype, on the host).
void cut_slices(const LoadedModel& whole, const std::vector<std::size_t>& wanted,
                std::span<const SliceRequest> requests, const SliceLayout& layout, std::byte* out, std::byte* raw) {
    for (std::size_t r = 0; r < requests.size(); ++r) {
        const std::size_t position =
            std::lower_bound(wanted.begin(), wanted.end(), requests[r].tensor_index) - wanted.begin();
        const LoadedTensor& tensor = whole.tensors[position];
        const auto runs = slice_element_runs(c_strides(tensor.info.shape), 0, requests[r].ranges);
        copy_runs(stored_destination(layout.places[r], out, raw), tensor.bytes.data(), runs,
                  itemsize(tensor.info.dtype));
    }
}

// Where a device load's request lands: the caller's device memory, else the load's block.
std::byte* device_output_of(const SlicePlace& place, std::byte* block) {
    return place.device_given != nullptr ? place.device_given : block + place.device_offset;
}

// The result's tensors, in request order, at their places in `memory` (the host arena, or on
// a device load the device block).
void fill_slices(LoadedModel& model, const Index& index, std::span<const SliceRequest> requests,
                 const SliceLayout& layout, std::byte* memory, bool on_device) {
    for (std::size_t r = 0; r < requests.size(); ++r) {
        const SlicePlace& place = layout.places[r];
        TensorInfo info = index.tensors[requests[r].tensor_index];
        info.shape = place.shape;
        info.dtype = place.loaded;
        info.byte_length = place.numel * itemsize(place.loaded);
        info.strides.clear();
        info.storage_index.reset();
        info.storage_offset = 0;
        std::byte* at = on_device ? device_output_of(place, memory) : output_of(place, memory);
        model.tensors.push_back({info, {at, info.byte_length}, {}});
        model.bytes += info.byte_length;
    }
}

// The helpers below that need the deserializer's state take its Impl as a template parameter:
// Deserializer::Impl is private, and only load_slices may name it.

// Every run in one plan through the ring.
template <class DeserializerImpl>
Result<RunStats> read_runs(DeserializerImpl& impl, std::span<const SliceRequest> requests, const LoadOptions& options,
                           const SliceReadOptions& read_options, const SliceLayout& layout, std::byte* out,
                           std::byte* raw, WorkerPool& pool) {
    std::vector<ByteRun> runs = byte_runs(impl.index, requests, layout, out, raw);
    if (runs.empty()) {
        return RunStats{};
    }
    std::size_t scratch_bytes = 0;
    const std::vector<ReadGroup> groups = group_runs(runs, scratch_bytes);
    std::shared_ptr<HostArena> scratch;
    if (scratch_bytes > 0) {
        RL_TRY(created, HostArena::create(scratch_bytes));
        scratch = std::move(created);
    }
    std::vector<PlainSpan> spans = read_spans(impl.index, requests, runs, groups, scratch ? scratch->data() : nullptr);
    RL_TRY(ring, impl.ring_for(options));
    RL_TRY(graph, build_plain_graph(std::move(spans), nullptr, impl.source_name(),
                                    read_options.merge_gap_bytes.value_or(slice_merge_gap_bytes)));
    RL_TRY(stats, impl.run_handler(options, *ring, pool, graph->plan(), *graph, requests.size(), nullptr));
    if (scratch) {
        copy_from_scratch(runs, groups, scratch->data());
    }
    return stats;
}

// A local file whose pages are in the page cache (its source reads it buffered: read_mode
// automatic found it cached, or buffered was asked for), read as stored: the runs are copied
// from the file's mapping by the workers, in pieces of at most mapped_copy_piece_bytes. The
// kernel's copy (a buffered read) writes into fresh memory a small page at a time; a copy in
// user space gets large pages. On one core, 1.36 GB into one fresh block: pread 2.5-2.9 s, a
// copy from the mapping 0.18-0.33 s; into 165 fresh torch tensors (a model's parameters) 0.72 s,
// what numpy's and torch's own copies take there too (docs/benchmarks.md).
constexpr std::uint64_t mapped_copy_piece_bytes = 4 << 20;

template <class DeserializerImpl>
bool copies_from_mapping(const DeserializerImpl& impl, const LoadOptions& options) {
    // Not a signed file's: its whole read is hashed on the way (SignedFileCheck, in run_handler),
    // which a copy out of the mapping would skip.
    return !impl.local_path.empty() && impl.source->alignment_bytes() == 1 && !impl.index.encrypted &&
           !options.verify_hashes && !impl.index.big_endian && !options.signed_file;
}

// The file is mapped a window at a time, so that the process's resident memory holds the
// destinations and one window of the file's pages, not the whole file besides them.
constexpr std::uint64_t mapped_copy_window_bytes = 256 << 20;

template <class DeserializerImpl>
Result<void> copy_window(DeserializerImpl& impl, const std::string& path, std::span<const ByteRun> pieces,
                         WorkerPool& pool) {
    const std::uint64_t begin = pieces.front().source_offset_bytes;
    std::uint64_t end = 0;
    for (const auto& piece : pieces) {
        end = std::max(end, piece.source_offset_bytes + piece.length_bytes);
    }
    auto mapped = HostArena::map_file(path, begin, static_cast<std::size_t>(end - begin), impl.index.source_size_bytes);
    if (!mapped) {
        return with_context(mapped.error(), impl.source_name());
    }
    const std::byte* base = (*mapped)->data();
    pool.parallel_for(pieces.size(), [&](std::size_t k) {
        std::memcpy(pieces[k].destination, base + (pieces[k].source_offset_bytes - begin), pieces[k].length_bytes);
    });
    return {};
}

template <class DeserializerImpl>
Result<RunStats> copy_from_mapping(DeserializerImpl& impl, std::span<const SliceRequest> requests,
                                   const SliceLayout& layout, std::byte* out, std::byte* raw, WorkerPool& pool) {
    std::vector<ByteRun> runs = byte_runs(impl.index, requests, layout, out, raw);
    std::vector<ByteRun> pieces;
    for (const auto& run : runs) {
        for (std::uint64_t at = 0; at < run.length_bytes; at += mapped_copy_piece_bytes) {
            const std::uint64_t length = std::min(mapped_copy_piece_bytes, run.length_bytes - at);
            pieces.push_back({run.source_offset_bytes + at, length, run.destination + at, run.request});
        }
    }
    std::sort(pieces.begin(), pieces.end(),
              [](const ByteRun& a, const ByteRun& b) { return a.source_offset_bytes < b.source_offset_bytes; });
    const std::string& path = impl.local_path;
    for (std::size_t first = 0; first < pieces.size();) {
        std::size_t last = first + 1;
        while (last < pieces.size() && pieces[last].source_offset_bytes + pieces[last].length_bytes <=
                                           pieces[first].source_offset_bytes + mapped_copy_window_bytes) {
            ++last;
        }
        RL_TRY_VOID(copy_window(impl, path, std::span<const ByteRun>(pieces).subspan(first, last - first), pool));
        first = last;
    }
    // Bytes of the file copied: runs that overlap (views sharing a storage) count once, as the
    // ring path reads each group of them once.
    std::size_t scratch_bytes = 0;
    RunStats stats;
    for (const auto& group : group_runs(runs, scratch_bytes)) {
        stats.bytes_read += group.end - group.begin;
    }
    return stats;
}

// Encrypted files and verify_hashes: the covering whole tensors through load(), then the cut.
Result<RunStats> read_whole_tensors(Deserializer& self, std::span<const SliceRequest> requests,
                                    const LoadOptions& options, const SliceLayout& layout, std::byte* out,
                                    std::byte* raw) {
    std::vector<std::size_t> wanted;
    for (const auto& request : requests) {
        wanted.push_back(request.tensor_index);
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    LoadOptions whole = options;
    whole.device = "cpu";
    whole.dtype.reset();
    whole.destination = nullptr;
    whole.contiguous = true;
    whole.compute_sha256 = false;
    whole.tensors = wanted;
    RL_TRY(model, self.load(whole));
    cut_slices(model, wanted, requests, layout, out, raw);
    RunStats stats;
    stats.bytes_read = model.bytes_read;
    return stats;
}

// Queues each slice's copy from the host into its place on the device: the caller's memory
// (a parameter) or the load's `block` (through page-locked staging).
Result<void> queue_uploads(DeviceLink& link, std::byte* block, const SliceLayout& layout, const HostArena& host) {
    for (const auto& place : layout.places) {
        const std::size_t length = place.numel * itemsize(place.loaded);
        if (length == 0) {
            continue;
        }
        RL_TRY(staging, link.staging(length));
        std::memcpy(staging.get(), host.data() + place.out_offset, length);
        RL_TRY_VOID(link.upload(device_output_of(place, block), staging.get(), length, staging));
    }
    return link.synchronize();
}

// The slices, cut on the host, into one device allocation.
template <class DeserializerImpl>
Result<LoadedModel> upload_slices(DeserializerImpl& impl, int ordinal, const LoadOptions& options,
                                  const SliceLayout& layout, const HostArena& host, const RunStats& stats) {
    RL_TRY(ring, impl.ring_for(options));
    RL_TRY(opened_link, impl.link_for(ordinal, *ring));
    DeviceLink& link = *opened_link;
    RL_TRY_VOID(link.order_after_default_stream());
    (void)link.take_scratch_peak_bytes();
    RL_TRY(memory, allocate_device_block(ordinal, layout.device_bytes));
    auto uploaded = queue_uploads(link, memory.get(), layout, host);
    if (!uploaded) {
        (void)link.synchronize(); // copies still queued must not outlive `memory`
        return uploaded.error();
    }
    return impl.device_model(link, memory, layout.device_bytes, stats);
}

} // namespace

Result<LoadedModel> Deserializer::load_slices(std::span<const SliceRequest> requests, const LoadOptions& options,
                                              const SliceReadOptions& read_options) {
    const auto started = std::chrono::steady_clock::now();
    const ReadsDoneAtExit reads_done(*impl_->source);
    RL_TRY(ordinal, gpu::parse_device(options.device));
    const Index& index = impl_->index;
    RL_TRY(layout, plan_slices(index, requests, options, ordinal != gpu::cpu_ordinal, impl_->source_name()));
    if (ordinal != gpu::cpu_ordinal) { // a device that cannot be used fails before anything is read
        RL_TRY(ring, impl_->ring_for(options));
        RL_TRY_VOID(impl_->link_for(ordinal, *ring));
    }
    RL_TRY(arena, HostArena::create(std::max<std::size_t>(layout.out_bytes, 1)));
    std::shared_ptr<HostArena> raw;
    if (layout.raw_bytes > 0) {
        RL_TRY(created, HostArena::create(layout.raw_bytes));
        raw = std::move(created);
    }
    std::byte* raw_base = raw ? raw->data() : nullptr;
    WorkerPool pool(options.worker_threads);
    const bool whole = index.encrypted || options.verify_hashes;
    const bool from_mapping = !whole && copies_from_mapping(*impl_, options);
    RL_TRY(read, whole ? read_whole_tensors(*this, requests, options, layout, arena->data(), raw_base)
                 : from_mapping
                     ? copy_from_mapping(*impl_, requests, layout, arena->data(), raw_base, pool)
                     : read_runs(*impl_, requests, options, read_options, layout, arena->data(), raw_base, pool));
    std::vector<ConversionJob> conversions;
    for (const auto& place : layout.places) {
        if (place.converts) {
            add_conversion_jobs(conversions, output_of(place, arena->data()), place.loaded, raw_base + place.raw_offset,
                                place.stored, place.numel);
        }
    }
    pool.parallel_for(conversions.size(), [&](std::size_t k) { conversions[k].run(); });
    raw.reset();

    LoadedModel model;
    if (ordinal == gpu::cpu_ordinal) {
        model.arena = arena;
        model.bytes_read = read.bytes_read;
        model.how =
            from_mapping ? "copied from the file's mapping (cached), slices" : impl_->source->describe() + ", slices";
        fill_slices(model, index, requests, layout, arena->data(), false);
    } else {
        RL_TRY(uploaded, upload_slices(*impl_, ordinal, options, layout, *arena, read));
        model = std::move(uploaded);
        fill_slices(model, index, requests, layout, model.device_memory.get(), true);
    }
    model.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return model;
}

} // namespace ringload
