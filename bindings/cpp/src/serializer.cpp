// bindings/cpp/src/serializer.cpp
#include "ringload/serializer.hpp"

#include "formats/tensorizer/write_graph.hpp"
#include "gpu/cuda_link.hpp"
#include "gpu/device_memory.hpp"
#include "remote_publish.hpp"
#include "ringload/engine/write_executor.hpp"
#include "ringload/io/file_sink.hpp"
#include "ringload/io/remote_source.hpp"
#include "run_on_loop.hpp"
#include "secret_material.hpp"
#include "uri.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>

namespace ringload {
namespace {

std::optional<tensorizer::WriteEncryption> write_encryption(const std::optional<EncryptionParams>& params) {
    if (!params) {
        return std::nullopt;
    }
    const SecretMaterial& secret = params->secret();
    tensorizer::WriteEncryption encryption{*secret.key, std::nullopt};
    if (secret.derivation) {
        tensorizer::KeyDerivationRecord record;
        record.params = *secret.derivation;
        encryption.key_derivation = record;
    }
    return encryption;
}

Result<WriteSummary> write_tensorizer_file(const std::string& path, std::span<const TensorToWrite> tensors,
                                           const WriteOptions& options) {
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    const auto encryption = write_encryption(options.encryption);
    // Tensors on a GPU are copied device-to-host into the slots by the workers.
    std::unique_ptr<DeviceLink> device;
    auto on_device = std::find_if(tensors.begin(), tensors.end(), [](const auto& t) { return t.device >= 0; });
    if (on_device != tensors.end()) {
        RL_TRY(link, gpu::open_device_link(on_device->device));
        device = std::move(link);
        RL_TRY_VOID(device->order_after_default_stream()); // kernels still writing the tensors
    }
    RL_TRY(graph, tensorizer::WriteGraph::create(tensors, encryption ? &*encryption : nullptr, path, device.get()));

    // Declared in this order so that the ring and the sink go before the loop they use.
    asio::io_context loop{1};
    RL_TRY(sink, create_file_sink(loop, path));
    RL_TRY_VOID(sink->reserve(graph->plan().length_bytes));
    RL_TRY(ring, BufferRing::create(loop, {options.slot_count, options.slot_size_bytes}));
    if (sink->uses_io_uring()) {
        ring->register_with_io_uring(); // false is fine: plain buffers then
    }
    std::shared_ptr<void> pinned; // page-locked slots make the device-to-host copies DMA
    if (device) {
        RL_TRY(pinning, gpu::pin_host_memory(ring->memory()));
        pinned = std::move(pinning);
    }
    WorkerPool pool(options.worker_threads);
    RunControls controls;
    controls.cancel = options.cancel;
    controls.progress = options.progress;
    controls.progress_tensors_total = tensors.size();
    RL_TRY(stats, run_on_loop(loop, run_write_plan(*sink, *ring, pool, graph->plan(), *graph, controls)));
    (void)stats;
    // A cancel that came after the last window still stops the file from appearing.
    if (options.cancel != nullptr && options.cancel->cancelled()) {
        return fail(errc::cancelled, path + ": cancelled by the caller");
    }
    RL_TRY(header_pages, graph->finished_header_pages());
    std::vector<PageWrite> pages;
    for (const auto& [offset, bytes] : header_pages) {
        pages.push_back({offset, bytes});
    }
    RL_TRY_VOID(run_on_loop(loop, sink->write_pages(pages)));
    RL_TRY_VOID(sink->commit(graph->plan().length_bytes));

    WriteSummary summary;
    summary.file_bytes = graph->plan().length_bytes;
    summary.tensor_bytes = graph->tensor_bytes();
    summary.data_version = graph->data_version();
    summary.how = sink->describe();
    summary.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return summary;
}

} // namespace

Result<WriteSummary> write_tensorizer(std::string_view uri, std::span<const TensorToWrite> tensors,
                                      const WriteOptions& options) {
    if (!is_remote_uri(uri)) {
        RL_TRY(path, local_path_of(uri));
        return write_tensorizer_file(path, tensors, options);
    }
    // Remote targets: the file is made locally first (every byte of it is final only once the
    // hashes are in), then published in one go, as tensorizer does for s3://.
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    RL_TRY(staging, StagingFile::create());
    RL_TRY(summary, write_tensorizer_file(staging.path(), tensors, options));
    RL_TRY(published, publish_remote(staging.path(), uri, options.network));
    summary.how += ", then " + published;
    summary.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return summary;
}

} // namespace ringload
