// bindings/cpp/src/deserializer.cpp
#include "ringload/ringload.hpp"

#include "formats/tensorizer/key_resolver.hpp"
#include "formats/tensorizer/load_graph.hpp"
#include "formats/tensorizer/reader.hpp"
#include "ringload/engine/executor.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/host_arena.hpp"
#include "ringload/io/file_source.hpp"
#include "ringload/io/remote_source.hpp"
#include "run_on_loop.hpp"
#include "secret_material.hpp"
#include "uri.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <optional>

namespace ringload {
namespace {

constexpr std::size_t ring_bytes_default = 128 << 20; // 32 slots of 4 MiB, 16 of 8 MiB

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

struct Deserializer::Impl {
    std::string uri;
    asio::io_context loop{1};
    std::unique_ptr<Source> source;
    Index index;
    std::unique_ptr<BufferRing> ring;
    std::optional<tensorizer::KeyResolver> keys;

    // The ring a load with these options uses: the existing one when it fits.
    Result<BufferRing*> ring_for(const LoadOptions& options) {
        const std::size_t size =
            options.slot_size_bytes != 0 ? options.slot_size_bytes : source->preferred_read_bytes();
        const std::uint32_t count =
            options.slot_count != 0 ? options.slot_count
                                    : static_cast<std::uint32_t>(std::max<std::size_t>(2, ring_bytes_default / size));
        if (ring && ring->slot_count() == count && ring->slot_size_bytes() == size) {
            return ring.get();
        }
        ring.reset();
        RL_TRY(created, BufferRing::create(loop, {count, size}));
        ring = std::move(created);
        if (source->uses_io_uring()) {
            ring->register_with_io_uring(); // false is fine: plain buffers then
        }
        return ring.get();
    }
};

std::vector<TensorToWrite> tensors_to_write(const LoadedModel& model) {
    std::vector<TensorToWrite> tensors;
    tensors.reserve(model.tensors.size());
    for (const auto& tensor : model.tensors) {
        const TensorInfo& info = tensor.info;
        tensors.push_back(
            {info.path, info.dtype, info.shape, tensor.bytes, info.is_meta, info.module_index, info.tensor_type});
    }
    return tensors;
}

Deserializer::Deserializer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Deserializer::Deserializer(Deserializer&&) noexcept = default;
Deserializer& Deserializer::operator=(Deserializer&&) noexcept = default;
Deserializer::~Deserializer() {
    if (impl_) {
        impl_->ring.reset(); // before the loop (and its io_uring) goes
    }
}

const Index& Deserializer::index() const noexcept {
    return impl_->index;
}
const std::string& Deserializer::uri() const noexcept {
    return impl_->uri;
}

Result<Deserializer> Deserializer::open(std::string_view uri, OpenOptions options) {
    auto impl = std::make_unique<Impl>();
    impl->uri = std::string(uri);
    if (is_remote_uri(uri)) {
        RL_TRY(source, run_on_loop(impl->loop, open_remote_source(impl->loop, impl->uri, options.network)));
        impl->source = std::move(source);
    } else {
        RL_TRY(path, local_path_of(uri));
        RL_TRY(source, open_file_source(impl->loop, path, {file_read_mode(options.read_mode)}));
        impl->source = std::move(source);
    }
    RL_TRY(index, run_on_loop(impl->loop, tensorizer::read_index(*impl->source)));
    impl->index = std::move(index);
    if (options.decryption) {
        const SecretMaterial& secret = options.decryption->secret();
        impl->keys.emplace(secret.key ? tensorizer::KeyResolver::with_key(*secret.key)
                                      : tensorizer::KeyResolver::with_passphrase(secret.passphrase));
        RL_TRY_VOID(run_on_loop(impl->loop, tensorizer::prepare_keys(*impl->source, impl->index, *impl->keys)));
    }
    // The ring is allocated, pre-faulted and registered once per deserializer, here, so that
    // loads (a server may run many) start reading at once. A load with other ring options
    // replaces it.
    RL_TRY_VOID(impl->ring_for(LoadOptions{}));
    return Deserializer(std::move(impl));
}

Result<LoadedModel> Deserializer::load(const LoadOptions& options) {
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    const Index& index = impl_->index;

    // One arena for every wanted tensor, each at a 64-byte boundary.
    std::vector<std::size_t> selected;
    std::vector<std::size_t> arena_offsets;
    std::size_t arena_bytes = 0;
    for (std::size_t i = 0; i < index.tensors.size(); ++i) {
        if (options.filter && !options.filter(index.tensors[i])) {
            continue;
        }
        selected.push_back(i);
        arena_offsets.push_back(arena_bytes);
        arena_bytes = align_tensor_offset(arena_bytes + index.tensors[i].byte_length);
    }
    RL_TRY(ring, impl_->ring_for(options));
    RL_TRY(arena, HostArena::create(std::max<std::size_t>(arena_bytes, 1)));
    if (options.prefault_in_background) {
        arena->prefault_in_background();
    }

    std::vector<tensorizer::TensorDestination> destinations;
    for (std::size_t k = 0; k < selected.size(); ++k) {
        destinations.push_back({selected[k], arena->data() + arena_offsets[k]});
    }
    // A remote source's name is its URI without a password (redis://user:***@host/...).
    const std::string& name = is_remote_uri(impl_->uri) ? impl_->source->name() : impl_->uri;
    RL_TRY(graph, tensorizer::LoadGraph::create(index, destinations,
                                                {options.verify_hashes, impl_->keys ? &*impl_->keys : nullptr}, name));
    WorkerPool pool(options.worker_threads);

    RunControls controls;
    controls.cancel = options.cancel;
    controls.progress = options.progress;
    controls.progress_tensors_total = selected.size();
    RL_TRY(stats, run_on_loop(impl_->loop, run_plan(*impl_->source, *ring, pool, graph->plan(), *graph, controls)));
    arena->join_prefault();

    LoadedModel model;
    model.arena = arena;
    model.bytes_read = stats.bytes_read;
    model.how = impl_->source->describe();
    for (std::size_t k = 0; k < selected.size(); ++k) {
        TensorInfo info = index.tensors[selected[k]];
        info.module_index = graph->module_index_of(index.tensors[selected[k]]);
        model.tensors.push_back({info, {arena->data() + arena_offsets[k], info.byte_length}, {}});
        model.bytes += info.byte_length;
    }
    model.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (options.compute_sha256) {
        pool.parallel_for(model.tensors.size(),
                          [&](std::size_t k) { model.tensors[k].sha256_hex = to_hex(sha256(model.tensors[k].bytes)); });
    }
    return model;
}

} // namespace ringload
