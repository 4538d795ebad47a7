// bindings/cpp/src/load/deserializer_impl.hpp
//
// The Deserializer's state, shared by the files that implement its open and loads:
// deserializer_impl.cpp (the source, the index; tensorizer and safetensors, one destination per
// tensor), storage_load.cpp (torch zip, storages and the views into them), mapped_load.cpp,
// slice_load.cpp and streamed_tensors.cpp. The public Deserializer (bindings/cpp/src) is a
// thin front over it.
#pragma once

#include "formats/format_hooks.hpp"
#include "formats/tensorizer/key_resolver.hpp"
#include "load/load_layout.hpp"
#include "ringload/engine/dtype_convert.hpp"
#include "ringload/engine/executor.hpp"
#include "ringload/engine/plain_graph.hpp"
#include "ringload/engine/tensor_destination.hpp"
#include "ringload/engine/worker_pool.hpp"
#include "ringload/ringload.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace ringload {

inline constexpr std::size_t ring_bytes_default = 128 << 20; // 32 slots of 4 MiB, 16 of 8 MiB

// A piece of a CPU dtype conversion: blocks of a million elements spread over the workers.
struct ConversionJob {
    std::byte* out;
    DType to;
    const std::byte* in;
    DType from;
    std::uint64_t count;
    void run() const { convert_elements(out, to, in, from, count); }
};

inline void add_conversion_jobs(std::vector<ConversionJob>& jobs, std::byte* out, DType to, const std::byte* in,
                                DType from, std::uint64_t count) {
    constexpr std::uint64_t block = 1 << 20;
    for (std::uint64_t at = 0; at < count; at += block) {
        jobs.push_back({out + at * itemsize(to), to, in + at * itemsize(from), from, std::min(block, count - at)});
    }
}

// One device allocation of `bytes` for a load's own tensors on CUDA device `ordinal` (null for 0).
Result<std::shared_ptr<std::byte>> allocate_device_block(int ordinal, std::size_t bytes);

// A load's stage graph, as the file's format built it (FormatHooks::build_load_graph).
struct FormatGraph {
    std::unique_ptr<ChunkHandler> handler;
    const Plan* plan = nullptr;
    std::shared_ptr<const RecordHeaders> headers; // what the run read from per-tensor headers, if any
    StageGraph* stages = nullptr;                 // the handler, for on_record_done
};

// What a run does as its records' bytes become final (StageGraph::on_record_done: the record's
// RecordSpec::id) and the count of tensors handed over that its progress reports.
struct RunHooks {
    std::function<void(std::size_t id)> record_done; // empty: nothing to do per record
    const std::atomic<std::uint64_t>* tensors_done = nullptr;
};

struct Deserializer::Impl {
    std::string uri;
    std::string local_path; // the file, when a local file is the source (else ""): mapped reads
    asio::io_context loop{1};
    std::unique_ptr<Source> source;
    Index index;
    std::unique_ptr<BufferRing> ring;
    std::shared_ptr<void> ring_pinned;                // the ring page-locked for CUDA, once a GPU load needs it
    std::map<int, std::unique_ptr<DeviceLink>> links; // by CUDA ordinal, opened by the first load there
    std::optional<tensorizer::KeyResolver> keys;

    ~Impl() {
        links.clear();
        ring_pinned.reset();
        ring.reset(); // before the loop (and its io_uring) goes
    }

    // Deserializer::open and Deserializer::load (deserializer_impl.cpp).
    static Result<std::unique_ptr<Impl>> open(std::string_view uri, OpenOptions options);
    Result<LoadedModel> load(const LoadOptions& options);

    // Runs the format's graph; `graph` keeps it for what the caller asks of it afterwards.
    Result<RunStats> run(const LoadOptions& options, BufferRing& ring_in_use, WorkerPool& pool,
                         const LoadLayout& layout, std::vector<TensorDestination> destinations, DeviceLink* device,
                         FormatGraph& graph, const RunHooks& hooks);
    Result<FormatGraph> make_graph(const LoadOptions& options, std::vector<TensorDestination> destinations,
                                   DeviceLink* device, const std::string& name);
    // The load on `ordinal` (the CPU or a CUDA device) the file's format calls for.
    Result<LoadedModel> load_on(const LoadOptions& options, const LoadLayout& layout, WorkerPool& pool, int ordinal);
    // load_on for a file of a signed model (LoadOptions::signed_file): never mapped, and the
    // streamed hand-over held until the whole file's digest matched.
    Result<LoadedModel> load_signed(const LoadOptions& options, const LoadLayout& layout, WorkerPool& pool,
                                    int ordinal);
    Result<LoadedModel> load_to_host(const LoadOptions& options, const LoadLayout& layout, WorkerPool& pool);
    // Placement::mapped_file (mapped_load.cpp): why this load cannot leave its tensors in the
    // file's pages, or nothing when it can; and that load.
    std::optional<std::string> why_not_mapped(const LoadOptions& options, const LoadLayout& layout, int ordinal) const;
    Result<LoadedModel> load_mapped(const LoadOptions& options, const LoadLayout& layout);
    // Host memory a load to the CPU allocates (its arena, conversion scratch, torch copies).
    std::uint64_t host_bytes_needed(const LoadOptions& options, const LoadLayout& layout) const;
    Result<LoadedModel> load_to_device(const LoadOptions& options, const LoadLayout& layout, WorkerPool& pool,
                                       int ordinal);
    // torch zip: the storages the wanted tensors view are read into one block, and the
    // tensors are views of it (or gathered copies where the caller asks for C order or a dtype).
    Result<LoadedModel> load_storages_to_host(const LoadOptions& options, const LoadLayout& layout, WorkerPool& pool);
    Result<LoadedModel> load_storages_to_device(const LoadOptions& options, const LoadLayout& layout, WorkerPool& pool,
                                                int ordinal);
    // Runs `handler`'s plan from the source through the ring, with the load's progress and cancel.
    Result<RunStats> run_handler(const LoadOptions& options, BufferRing& ring_in_use, WorkerPool& pool,
                                 const Plan& plan, ChunkHandler& handler, std::size_t tensors_total,
                                 const std::atomic<std::uint64_t>* tensors_done);
    // A device load's model before its tensors: where they are, what was read and how.
    // block_bytes: the tensors' device allocation (with the link's scratch peak since the
    // load took it at its start: LoadedModel::device_peak_bytes).
    LoadedModel device_model(DeviceLink& link, std::shared_ptr<std::byte> memory, std::uint64_t block_bytes,
                             const RunStats& stats) const;
    // Reads `spans` through a plain stage graph (host or `device` memory).
    Result<RunStats> run_copy(const LoadOptions& options, BufferRing& ring_in_use, WorkerPool& pool,
                              std::vector<PlainSpan> spans, DeviceLink* device, std::size_t tensors_total,
                              const RunHooks& hooks);
    // The device link of CUDA device `ordinal`, opened (and the ring page-locked) on first use.
    Result<DeviceLink*> link_for(int ordinal, BufferRing& ring_in_use);
    // The source's name in messages: a remote URI without its password.
    const std::string& source_name() const;
    // The alignment host tensors keep so that the source reads straight into them
    // (load_layout.hpp); 1 where any address does, or where it reads only into slots.
    std::size_t host_read_alignment() const;
    // What start_prefault chose (for LoadedModel::how), and what stops the pre-fault when the
    // load is cancelled: hold it for the load's length.
    struct StartedPrefault {
        std::string_view how;
        CancelToken::Subscription stops_on_cancel;
    };
    // Starts faulting `arena` in from a background thread where options.prefault asks for it.
    StartedPrefault start_prefault(const LoadOptions& options, HostArena& arena) const;

    // The model's tensors, each at its place (given or in `owned`).
    void fill_tensors(LoadedModel& model, const LoadLayout& layout, std::byte* owned, const FormatGraph& graph) const;
    // One of them, once its record is complete (its header read).
    LoadedTensor loaded_tensor(const PlannedTensor& planned, std::byte* owned, const FormatGraph& graph) const;
    // Each index position's place in the layout (npos for tensors not loaded).
    std::vector<std::size_t> layout_positions(const LoadLayout& layout) const;

    // The ring a load with these options uses: the existing one when it fits.
    Result<BufferRing*> ring_for(const LoadOptions& options) {
        const std::size_t size =
            options.slot_size_bytes != 0 ? options.slot_size_bytes : source->preferred_read_bytes();
        const std::uint32_t count =
            options.slot_count != 0 ? options.slot_count
                                    : static_cast<std::uint32_t>(std::max<std::size_t>(2, ring_bytes_default / size));
        const bool through_slots = !reads_mostly_in_place(options);
        if (!ring || ring->slot_count() != count || ring->slot_size_bytes() != size) {
            ring_pinned.reset();
            ring.reset();
            RL_TRY(created, BufferRing::create(loop, {count, size, through_slots}));
            ring = std::move(created);
        }
        if (through_slots && source->uses_io_uring()) {
            ring->register_with_io_uring(); // false is fine: plain buffers then (true at once if done)
        }
        return ring.get();
    }
    // A host load of stored types from a source that reads straight into aligned host memory
    // (O_DIRECT): its tensors of 1 MiB or more take their bytes in place (load_layout.hpp), so
    // its ring is left unfaulted and unregistered (4 MiB of zeroing and pinning per slot saved).
    bool reads_mostly_in_place(const LoadOptions& options) const;
};

} // namespace ringload
