// bindings/cpp/src/load/deserializer.cpp
//
// A Deserializer's open and load, end to end: the source for the URI, the index, the keys, the
// ring; then the load the format and the destination call for (host, device, mapped, storages).
// The public class (ringload.hpp) is at the end; its other loads are mapped_load.cpp,
// slice_load.cpp and storage_load.cpp, members of the same Impl (deserializer_impl.hpp).
#include "ringload/ringload.hpp"

#include "formats/registry.hpp"
#include "formats/tensorizer/key_resolver.hpp"
#include "formats/tensorizer/reader.hpp"
#include "gpu/cuda_link.hpp"
#include "gpu/device_memory.hpp"
#include "gpu/device_name.hpp"
#include "load/deserializer_impl.hpp"
#include "load/load_layout.hpp"
#include "load/tensor_handover.hpp"
#include "ringload/engine/dtype_convert.hpp"
#include "ringload/engine/executor.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/host_arena.hpp"
#include "ringload/io/file_source.hpp"
#include "ringload/io/object_cache.hpp"
#include "ringload/io/reader_source.hpp"
#include "ringload/io/source_registry.hpp"
#include "ringload/memory_backing.hpp"
#include "ringload/memory_room.hpp"
#include "run_on_loop.hpp"
#include "secret_material.hpp"
#include "signing/signed_file_check.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>

namespace ringload {
namespace {

// The SHA-256 of each tensor's bytes as they are on the device, copied back in pieces.
Result<void> hash_device_tensors(DeviceLink& link, LoadedModel& model) {
    constexpr std::size_t piece_bytes = 64 << 20;
    RL_TRY(staging, link.staging(piece_bytes));
    for (auto& tensor : model.tensors) {
        Sha256 sha;
        for (std::size_t at = 0; at < tensor.bytes.size(); at += piece_bytes) {
            const std::size_t length = std::min(piece_bytes, tensor.bytes.size() - at);
            RL_TRY_VOID(link.download(staging.get(), tensor.bytes.data() + at, length));
            sha.update({staging.get(), length});
        }
        tensor.sha256_hex = to_hex(sha.finish());
    }
    return {};
}

// LoadOptions::tensors: positions in the index, ascending, each once.
Result<void> check_listed_tensors(const Index& index, const std::vector<std::size_t>& tensors, const std::string& uri) {
    for (std::size_t k = 0; k < tensors.size(); ++k) {
        if (tensors[k] >= index.tensors.size()) {
            return fail(errc::invalid_argument, uri + ": tensor " + std::to_string(tensors[k]) +
                                                    " was asked for, but the file has " +
                                                    std::to_string(index.tensors.size()));
        }
        if (k > 0 && tensors[k] <= tensors[k - 1]) {
            return fail(errc::invalid_argument, uri + ": LoadOptions::tensors must be ascending and without repeats");
        }
    }
    return {};
}

FileReadMode file_read_mode(ReadMode mode) {
    switch (mode) {
        case ReadMode::direct:
            return FileReadMode::direct;
        case ReadMode::buffered:
            return FileReadMode::buffered;
        case ReadMode::automatic:
            break;
    }
    return FileReadMode::automatic;
}

} // namespace

std::vector<TensorToWrite> tensors_to_write(const LoadedModel& model) {
    auto parsed = gpu::parse_device(model.device);
    const int device = parsed ? *parsed : gpu::cpu_ordinal;
    std::vector<TensorToWrite> tensors;
    tensors.reserve(model.tensors.size());
    for (const auto& tensor : model.tensors) {
        const TensorInfo& info = tensor.info;
        tensors.push_back({info.path, info.dtype, info.shape, tensor.bytes, info.is_meta, info.module_index,
                           info.tensor_type, device});
    }
    return tensors;
}

Result<FormatGraph> Deserializer::Impl::make_graph(const LoadOptions& options,
                                                   std::vector<TensorDestination> destinations, DeviceLink* device,
                                                   const std::string& name) {
    if (options.verify_hashes && !index.format->stores_hashes) {
        return fail(errc::unsupported,
                    name + ": " + std::string(index.format_name()) + " files store no checksums to verify");
    }
    const LoadGraphRequest request{options.verify_hashes, keys ? &*keys : nullptr, device, name};
    RL_TRY(graph, index.format->hooks->build_load_graph(index, std::move(destinations), request));
    FormatGraph made{nullptr, &graph.stages->plan(), std::move(graph.headers), graph.stages.get()};
    made.handler = std::move(graph.stages);
    return made;
}

Deserializer::Impl::StartedPrefault Deserializer::Impl::start_prefault(const LoadOptions& options,
                                                                       HostArena& arena) const {
    // A thread costs more than faulting a few MiB in on touch (safe_open's get_tensor of one
    // small tensor).
    constexpr std::size_t prefault_min_bytes = 4 << 20;
    if (options.prefault == Prefault::on_touch ||
        (options.prefault == Prefault::automatic && arena.size_bytes() < prefault_min_bytes)) {
        return {"memory faulted in on touch", {}};
    }
    std::string_view how = "memory faulted in ahead";
    // A source that copies into the tensors itself (a socket's receive, a page-cache read in
    // place: alignment 1) writes lines the fault just zeroed, still in cache; a DMA (O_DIRECT)
    // gains nothing from that, and pages zeroed ahead keep the faults off the loop thread.
    if (options.prefault == Prefault::automatic && source->accepts_any_destination() &&
        source->alignment_bytes() == 1) {
        if (!fresh_memory_may_wait_for_host()) {
            return {"memory faulted in on touch", {}};
        }
        how = "memory faulted in ahead (the VM's host backs fresh memory lazily)";
    }
    arena.prefault_in_background();
    if (options.cancel == nullptr) {
        return {how, {}};
    }
    // A cancel stops it at its next step, whatever the load's own thread is waiting for
    // meanwhile: on a busy machine a cancelled load's thread took 0.9 s to drop its arena, and
    // the pre-fault had zeroed all of its 1 GiB for nothing.
    return {how, options.cancel->subscribe([&arena] { arena.stop_prefault(); })};
}

std::size_t Deserializer::Impl::host_read_alignment() const {
    return source->accepts_any_destination() ? std::max<std::size_t>(source->alignment_bytes(), 1) : 1;
}

bool Deserializer::Impl::reads_mostly_in_place(const LoadOptions& options) const {
    const Result<int> ordinal = gpu::parse_device(options.device); // as load() decides host or device
    return host_read_alignment() > 1 && !options.dtype && ordinal && *ordinal == gpu::cpu_ordinal;
}

const std::string& Deserializer::Impl::source_name() const {
    // A remote source's name is its URI without a password (redis://user:***@host/...).
    return local_path.empty() ? source->name() : uri;
}

Result<RunStats> Deserializer::Impl::run_copy(const LoadOptions& options, BufferRing& ring_in_use, WorkerPool& pool,
                                              std::vector<PlainSpan> spans, DeviceLink* device,
                                              std::size_t tensors_total, const RunHooks& hooks) {
    RL_TRY(graph, build_plain_graph(std::move(spans), device, source_name()));
    if (hooks.record_done) {
        graph->on_record_done(hooks.record_done);
    }
    return run_handler(options, ring_in_use, pool, graph->plan(), *graph, tensors_total, hooks.tensors_done);
}

Result<RunStats> Deserializer::Impl::run_handler(const LoadOptions& options, BufferRing& ring_in_use, WorkerPool& pool,
                                                 const Plan& plan, ChunkHandler& handler, std::size_t tensors_total,
                                                 const std::atomic<std::uint64_t>* tensors_done) {
    RunControls controls;
    controls.cancel = options.cancel;
    controls.progress = options.progress;
    controls.progress_tensors_total = tensors_total;
    controls.tensors_done = tensors_done;
    controls.reads_done = options.on_reads_done;
    if (options.signed_file) {
        // A load to a device may decrypt or byte-swap in the slots: the hash reads copies then.
        const bool to_device = options.device != "cpu";
        RL_TRY(check, SignedFileCheck::create(handler, plan, *options.signed_file, source->size_bytes(), to_device));
        return run_on_loop(loop, run_plan(*source, ring_in_use, pool, check->plan(), *check, controls));
    }
    return run_on_loop(loop, run_plan(*source, ring_in_use, pool, plan, handler, controls));
}

Result<std::shared_ptr<std::byte>> allocate_device_block(int ordinal, std::size_t bytes) {
    if (bytes == 0) {
        return std::shared_ptr<std::byte>();
    }
    return gpu::allocate_device_memory(ordinal, bytes);
}

LoadedModel Deserializer::Impl::device_model(DeviceLink& link, std::shared_ptr<std::byte> memory,
                                             std::uint64_t block_bytes, const RunStats& stats) const {
    LoadedModel model;
    model.device = link.name();
    model.device_peak_bytes = block_bytes + link.take_scratch_peak_bytes();
    model.device_memory = std::move(memory);
    model.bytes_read = stats.bytes_read;
    model.how = source->describe() + ", to " + link.name();
    return model;
}

Result<DeviceLink*> Deserializer::Impl::link_for(int ordinal, BufferRing& ring_in_use) {
    if (!links.contains(ordinal)) {
        RL_TRY(link, gpu::open_device_link(ordinal));
        links.emplace(ordinal, std::move(link));
    }
    if (!ring_pinned) {
        RL_TRY(pinned, gpu::pin_host_memory(ring_in_use.memory()));
        ring_pinned = std::move(pinned);
    }
    return links.at(ordinal).get();
}

Result<RunStats> Deserializer::Impl::run(const LoadOptions& options, BufferRing& ring_in_use, WorkerPool& pool,
                                         const LoadLayout& layout, std::vector<TensorDestination> destinations,
                                         DeviceLink* device, FormatGraph& graph, const RunHooks& hooks) {
    RL_TRY(created, make_graph(options, std::move(destinations), device, source_name()));
    graph = std::move(created);
    if (hooks.record_done) {
        graph.stages->on_record_done(hooks.record_done);
    }
    return run_handler(options, ring_in_use, pool, *graph.plan, *graph.handler, layout.tensors.size(),
                       hooks.tensors_done);
}

LoadedTensor Deserializer::Impl::loaded_tensor(const PlannedTensor& planned, std::byte* owned,
                                               const FormatGraph& graph) const {
    TensorInfo info = loaded_info(index.tensors[planned.index], planned);
    if (graph.headers != nullptr) {
        info.module_index = graph.headers->module_index_of(index.tensors[planned.index]);
    }
    std::byte* bytes = planned.place(owned);
    const std::uint64_t length = info.byte_length;
    return {std::move(info), {bytes, length}, {}};
}

std::vector<std::size_t> Deserializer::Impl::layout_positions(const LoadLayout& layout) const {
    std::vector<std::size_t> positions(index.tensors.size(), static_cast<std::size_t>(-1));
    for (std::size_t k = 0; k < layout.tensors.size(); ++k) {
        positions[layout.tensors[k].index] = k;
    }
    return positions;
}

void Deserializer::Impl::fill_tensors(LoadedModel& model, const LoadLayout& layout, std::byte* owned,
                                      const FormatGraph& graph) const {
    model.tensors.reserve(layout.tensors.size());
    for (const auto& planned : layout.tensors) {
        model.tensors.push_back(loaded_tensor(planned, owned, graph));
        model.bytes += model.tensors.back().info.byte_length;
    }
}

Result<LoadedModel> Deserializer::Impl::load_to_host(const LoadOptions& options, const LoadLayout& layout,
                                                     WorkerPool& pool) {
    RL_TRY(ring_in_use, ring_for(options));
    RL_TRY(arena, HostArena::create(std::max<std::size_t>(layout.owned_bytes, 1)));
    const StartedPrefault prefault = start_prefault(options, *arena);
    // Tensors that convert land raw in a scratch arena first, dropped after the conversion.
    std::shared_ptr<HostArena> raw;
    if (layout.raw_bytes > 0) {
        RL_TRY(created, HostArena::create(layout.raw_bytes));
        raw = std::move(created);
    }
    std::vector<TensorDestination> destinations;
    std::vector<std::byte*> raw_of(layout.tensors.size(), nullptr); // where a converting tensor lands raw
    std::size_t raw_offset = 0;
    for (std::size_t k = 0; k < layout.tensors.size(); ++k) {
        const PlannedTensor& planned = layout.tensors[k];
        if (planned.converts) {
            raw_of[k] = raw->data() + raw_offset;
            raw_offset = align_tensor_offset(raw_offset + index.tensors[planned.index].byte_length);
        }
        destinations.push_back(
            {planned.index, raw_of[k] != nullptr ? raw_of[k] : planned.place(arena->data()), std::nullopt});
    }
    // Each tensor is converted (on the worker that completed it) and handed over as soon as its
    // raw bytes are final.
    FormatGraph graph;
    TensorHandover handover(options, "cpu", arena);
    const std::vector<std::size_t> position_of = layout_positions(layout);
    RunHooks hooks{[&](std::size_t id) {
                       const std::size_t k = position_of[id];
                       const PlannedTensor& planned = layout.tensors[k];
                       if (raw_of[k] != nullptr) {
                           const TensorInfo& stored = index.tensors[planned.index];
                           convert_elements(planned.place(arena->data()), planned.dtype, raw_of[k], stored.dtype,
                                            stored.numel());
                       }
                       handover.hand_over(k, planned.given != nullptr,
                                          [&] { return loaded_tensor(planned, arena->data(), graph); });
                   },
                   handover.done()};
    RL_TRY(stats, run(options, *ring_in_use, pool, layout, std::move(destinations), nullptr, graph, hooks));
    arena->join_prefault();

    LoadedModel model;
    model.arena = arena;
    model.bytes_read = stats.bytes_read;
    model.bytes_in_place = stats.bytes_in_place;
    model.how = source->describe() + ", " + std::string(prefault.how);
    fill_tensors(model, layout, arena->data(), graph);
    return model;
}

Result<LoadedModel> Deserializer::Impl::load_to_device(const LoadOptions& options, const LoadLayout& layout,
                                                       WorkerPool& pool, int ordinal) {
    RL_TRY(ring_in_use, ring_for(options));
    RL_TRY(opened_link, link_for(ordinal, *ring_in_use));
    DeviceLink& link = *opened_link;
    RL_TRY_VOID(link.order_after_default_stream()); // the caller's pending kernels on its destinations
    (void)link.take_scratch_peak_bytes();           // this load's peak starts here
    RL_TRY(memory, allocate_device_block(ordinal, layout.owned_bytes));
    std::vector<TensorDestination> destinations;
    for (const auto& planned : layout.tensors) {
        std::byte* bytes = planned.place(memory.get());
        destinations.push_back({planned.index, bytes, planned.dtype});
    }
    FormatGraph graph;
    TensorHandover handover(options, link.name(), memory);
    const std::vector<std::size_t> position_of = layout_positions(layout);
    RunHooks hooks{[&](std::size_t id) {
                       const PlannedTensor& planned = layout.tensors[position_of[id]];
                       handover.hand_over(position_of[id], planned.given != nullptr,
                                          [&] { return loaded_tensor(planned, memory.get(), graph); });
                   },
                   handover.done()};
    auto stats = run(options, *ring_in_use, pool, layout, std::move(destinations), &link, graph, hooks);
    if (!stats) {
        (void)link.synchronize(); // conversions still queued must not outlive `memory`
        return stats.error();
    }

    LoadedModel model = device_model(link, memory, layout.owned_bytes, *stats);
    fill_tensors(model, layout, memory.get(), graph);
    return model;
}

Result<LoadedModel> Deserializer::Impl::load_on(const LoadOptions& options, const LoadLayout& layout, WorkerPool& pool,
                                                int ordinal) {
    const bool views = index.format->tensors_view_storages;
    if (options.placement == Placement::mapped_file) {
        if (const std::optional<std::string> why_not = why_not_mapped(options, layout, ordinal)) {
            return fail(errc::unsupported,
                        source_name() + ": cannot leave the tensors in the file's pages: " + *why_not);
        }
        return load_mapped(options, layout);
    }
    if (ordinal == gpu::cpu_ordinal) {
        // Memory the load would take past what the process may use: the kernel's OOM killer
        // would end it without a word. Checked before anything is read.
        const std::uint64_t need = host_bytes_needed(options, layout);
        constexpr std::uint64_t unchecked_bytes = 64 << 20; // small loads (safe_open's get_tensor) skip the reads
        if (std::optional<MemoryRoom> room; need > unchecked_bytes && (room = memory_room()) && need > room->bytes) {
            const std::optional<std::string> why_not = why_not_mapped(options, layout, ordinal);
            if (options.placement == Placement::automatic && !why_not) {
                return load_mapped(options, layout); // the file's pages: memory the kernel can reclaim
            }
            return fail(errc::out_of_memory,
                        source_name() + ": the load needs " + std::to_string(need) +
                            " bytes of memory and the process may take " + std::to_string(room->bytes) + " more (" +
                            room->limited_by +
                            ") before the kernel kills it: load fewer tensors (a filter) or give it more memory" +
                            (why_not ? "" : ", or leave the tensors in the file's pages (placement mapped)"));
        }
        return views ? load_storages_to_host(options, layout, pool) : load_to_host(options, layout, pool);
    }
    return views ? load_storages_to_device(options, layout, pool, ordinal)
                 : load_to_device(options, layout, pool, ordinal);
}

Result<std::unique_ptr<Deserializer::Impl>> Deserializer::Impl::open(std::string_view uri, OpenOptions options) {
    auto impl = std::make_unique<Impl>();
    impl->uri = std::string(uri);
    if (options.external_reader) {
        ExternalReader& reader = *options.external_reader;
        impl->source = make_reader_source(impl->uri, reader.size_bytes, std::move(reader.read), reader.how);
    } else if (const SourceKind* kind = source_for(uri)) {
        RL_TRY(source, run_on_loop(impl->loop, open_cached_source(impl->loop, *kind, impl->uri, options.network)));
        impl->source = std::move(source);
    } else {
        RL_TRY(path, local_path_of(uri));
        impl->local_path = path;
        RL_TRY(source, open_file_source(impl->loop, path, {file_read_mode(options.read_mode)}));
        impl->source = std::move(source);
    }
    const Format* expected = formats::named(options.expected_format);
    if (!options.expected_format.empty() && expected == nullptr) {
        return fail(errc::invalid_argument,
                    "expected_format '" + options.expected_format + "' is none of " + formats::names_text());
    }
    RL_TRY(index, run_on_loop(impl->loop, formats::read_any_index(*impl->source, expected)));
    impl->index = std::move(index);
    RL_ASSERT(impl->index.format != nullptr, "a format's reader left Index::format unset");
    if (options.decryption && !impl->index.format->may_be_encrypted) {
        return fail(errc::not_encrypted_key_given, impl->uri + ": a key or passphrase was given but " +
                                                       std::string(impl->index.format_name()) +
                                                       " files are never encrypted");
    }
    if (options.decryption) {
        const SecretMaterial& secret = options.decryption->secret();
        impl->keys.emplace(secret.key ? tensorizer::KeyResolver::with_key(*secret.key)
                                      : tensorizer::KeyResolver::with_passphrase(secret.passphrase));
        RL_TRY_VOID(run_on_loop(impl->loop, tensorizer::prepare_keys(*impl->source, impl->index, *impl->keys)));
    }
    // The ring is allocated, pre-faulted and registered once per deserializer, here, so that
    // loads (a server may run many) start reading at once. A load with other ring options
    // replaces it.
    if (options.ring_at_open) {
        RL_TRY_VOID(impl->ring_for(LoadOptions{}));
    }
    return impl;
}

Result<LoadedModel> Deserializer::Impl::load_signed(const LoadOptions& options, const LoadLayout& layout,
                                                    WorkerPool& pool, int ordinal) {
    // (Placement::mapped_file is refused by load_on: why_not_mapped names the signature.)
    // Streamed hand-over waits for the whole file's digest: tensors are collected as they
    // complete and handed over, in the order they came, once it matched.
    std::vector<StreamedTensor> held;
    LoadOptions holding = options;
    if (options.on_tensor) {
        holding.on_tensor = [&held](const StreamedTensor& tensor) { held.push_back(tensor); };
    }
    auto model = load_on(holding, layout, pool, ordinal);
    if (!model) {
        return failure_of_signed_file(*options.signed_file, std::move(model).error(), options.worker_threads);
    }
    for (const StreamedTensor& tensor : held) {
        options.on_tensor(tensor);
    }
    return std::move(*model);
}

Result<LoadedModel> Deserializer::Impl::load(const LoadOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    RL_TRY(ordinal, gpu::parse_device(options.device));
    RL_TRY_VOID(check_listed_tensors(index, options.tensors, uri));
    // Host tensors sit where aligned reads can land in them (a device load copies from slots).
    const LoadLayout layout = plan_load(index, options, ordinal == gpu::cpu_ordinal ? host_read_alignment() : 1);
    WorkerPool pool(options.worker_threads);
    RL_TRY(model,
           options.signed_file ? load_signed(options, layout, pool, ordinal) : load_on(options, layout, pool, ordinal));
    model.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (options.compute_sha256 && ordinal == gpu::cpu_ordinal) {
        pool.parallel_for(model.tensors.size(),
                          [&](std::size_t k) { model.tensors[k].sha256_hex = to_hex(sha256(model.tensors[k].bytes)); });
    } else if (options.compute_sha256) {
        RL_TRY_VOID(hash_device_tensors(*links.at(ordinal), model));
    }
    return model;
}

// The public class: each call goes to the Impl.

Deserializer::Deserializer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Deserializer::Deserializer(Deserializer&&) noexcept = default;
Deserializer& Deserializer::operator=(Deserializer&&) noexcept = default;
Deserializer::~Deserializer() = default;

const Index& Deserializer::index() const noexcept {
    return impl_->index;
}
const std::string& Deserializer::source_name() const {
    return impl_->source_name();
}
const std::string& Deserializer::uri() const noexcept {
    return impl_->uri;
}

Result<Deserializer> Deserializer::open(std::string_view uri, OpenOptions options) {
    RL_TRY(impl, Impl::open(uri, std::move(options)));
    return Deserializer(std::move(impl));
}

Result<LoadedModel> Deserializer::load(const LoadOptions& options) {
    const ReadsDoneAtExit reads_done(*impl_->source);
    return impl_->load(options);
}

} // namespace ringload
