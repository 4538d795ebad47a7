// bindings/cpp/src/write/serializer.cpp
#include "ringload/serializer.hpp"

#include "formats/format_hooks.hpp"
#include "formats/registry.hpp"
#include "formats/safetensors/format.hpp"
#include "formats/tensorizer/format.hpp"
#include "formats/tensorizer/write_graph.hpp"
#include "formats/torch/format.hpp"
#include "gpu/cuda_link.hpp"
#include "gpu/device_memory.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/engine/write_executor.hpp"
#include "ringload/io/file_sink.hpp"
#include "ringload/io/source_registry.hpp"
#include "ringload/model_signing.hpp"
#include "run_on_loop.hpp"
#include "secret_material.hpp"
#include "signing/model_folder.hpp"
#include "signing/piece_digests.hpp"
#include "write/remote_publish.hpp"
#include "write/written_digest.hpp"

#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <optional>

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

// How a write runs, whatever the format: the engine settings of WriteOptions.
struct RunSettings {
    std::uint32_t slot_count = 32;
    std::size_t slot_size_bytes = 4 << 20;
    std::size_t worker_threads = 0;
    ProgressCallback progress;
    const CancelToken* cancel = nullptr;
    WriteFeed* feed = nullptr;
    std::string sign_key_file;
    std::string signature_file;
};

template <class Options>
RunSettings run_settings(const Options& options) {
    return {options.slot_count, options.slot_size_bytes, options.worker_threads, options.progress, options.cancel,
            options.feed,       options.sign_key_file,   options.signature_file};
}

// The link to the device that holds some of the tensors (one device per write), or null.
Result<std::unique_ptr<DeviceLink>> device_link_for(std::span<const TensorToWrite> tensors) {
    std::unique_ptr<DeviceLink> device;
    auto on_device = std::find_if(tensors.begin(), tensors.end(), [](const auto& t) { return t.device >= 0; });
    if (on_device != tensors.end()) {
        RL_TRY(link, gpu::open_device_link(on_device->device));
        device = std::move(link);
        RL_TRY_VOID(device->order_after_default_stream()); // kernels still writing the tensors
    }
    return device;
}

// Runs a format's graph into a new file at `path` through the file sink (an unnamed temporary
// file until commit), writes the pages the format finished afterwards, and puts the file in
// place. Says how it was written.
Result<std::string> run_write_to_file(const std::string& path, FormatWriteGraph& graph, const RunSettings& settings,
                                      std::size_t tensor_count, bool on_device, WrittenDigest* digest) {
    const WritePlan& plan = graph.plan();
    // Declared in this order so that the ring and the sink go before the loop they use.
    asio::io_context loop{1};
    RL_TRY(sink, create_file_sink(loop, path));
    RL_TRY_VOID(sink->reserve(plan.length_bytes));
    RL_TRY(ring, BufferRing::create(loop, {settings.slot_count, settings.slot_size_bytes}));
    if (sink->uses_io_uring()) {
        ring->register_with_io_uring(); // false is fine: plain buffers then
    }
    std::shared_ptr<void> pinned; // page-locked slots make the device-to-host copies DMA
    if (on_device) {
        RL_TRY(pinning, gpu::pin_host_memory(ring->memory()));
        pinned = std::move(pinning);
    }
    WorkerPool pool(settings.worker_threads);
    RunControls controls;
    controls.cancel = settings.cancel;
    controls.progress = settings.progress;
    controls.progress_tensors_total = tensor_count;
    PieceProducer& producer = digest != nullptr ? static_cast<PieceProducer&>(*digest) : graph;
    RL_TRY(stats, run_on_loop(loop, run_write_plan(*sink, *ring, pool, plan, producer, controls, settings.feed)));
    (void)stats;
    // A cancel that came after the last window still stops the file from appearing.
    if (settings.cancel != nullptr && settings.cancel->cancelled()) {
        return fail(errc::cancelled, path + ": cancelled by the caller");
    }
    RL_TRY(finished, graph.finished_pages());
    std::vector<PageWrite> pages; // none for a format that finishes nothing (safetensors)
    for (const auto& [offset, bytes] : finished) {
        pages.push_back({offset, bytes});
    }
    if (!pages.empty()) {
        RL_TRY_VOID(run_on_loop(loop, sink->write_pages(pages)));
        if (digest != nullptr) {
            digest->invalidate();
        }
    }
    RL_TRY_VOID(sink->commit(plan.length_bytes));
    return sink->describe();
}

// The signature of the file just written at `path`, from the digest of its write (or, where the
// format patched pages after the run, of its pages, now in the page cache).
Result<void> sign_written(const std::string& path, WrittenDigest& digest, const RunSettings& settings,
                          WriteSummary& summary) {
    std::string sha;
    if (const std::optional<Sha256Digest> written = digest.digest(summary.file_bytes)) {
        sha.assign(reinterpret_cast<const char*>(written->data()), written->size());
        summary.how += ", SHA-256 hashed while writing";
    } else {
        const FolderFile file{".", path, summary.file_bytes};
        RL_TRY(hashed, hash_ranges({{&file, 0, summary.file_bytes}}, settings.worker_threads));
        sha = hashed.front();
        summary.how += ", SHA-256 hashed from the written pages (the format patched them after the data)";
    }
    SignatureWrite write;
    write.private_key_file = settings.sign_key_file;
    write.signature_file = settings.signature_file.empty() ? path + ".sig" : settings.signature_file;
    RL_TRY(signed_file, sign_file_digest(path, sha, summary.file_bytes, write));
    (void)signed_file;
    summary.signature_file = write.signature_file;
    summary.sha256_hex = to_hex({reinterpret_cast<const std::uint8_t*>(sha.data()), sha.size()});
    return {};
}

// One write of `format` into a new local file at `path`.
Result<WriteSummary> write_file(const Format& format, const std::string& path, std::span<const TensorToWrite> tensors,
                                const WriteLayout& layout, const RunSettings& settings) {
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    // Tensors on a GPU are copied device-to-host into the slots by the workers.
    RL_TRY(device, device_link_for(tensors));
    RL_TRY(graph, format.hooks->create_write_graph(tensors, layout, path, device.get()));
    if (settings.feed != nullptr) {
        RL_TRY_VOID(settings.feed->start(graph->tensor_extents())); // where the file reads each tensor
    }
    std::optional<WrittenDigest> digest;
    if (!settings.sign_key_file.empty()) {
        RL_TRY_VOID(check_signing_key(settings.sign_key_file)); // before a byte is written
        digest.emplace(*graph);
    }
    RL_TRY(how,
           run_write_to_file(path, *graph, settings, tensors.size(), device != nullptr, digest ? &*digest : nullptr));

    WriteSummary summary;
    summary.file_bytes = graph->plan().length_bytes;
    summary.tensor_bytes = graph->tensor_bytes();
    summary.data_version = graph->data_version();
    summary.how = std::move(how);
    if (digest) {
        RL_TRY_VOID(sign_written(path, *digest, settings, summary));
    }
    summary.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return summary;
}

// Remote targets: the file is made locally first (every byte of it is final only once the
// hashes are in), then published in one go, as tensorizer does for s3://.
Result<WriteSummary> write_remote(const SourceKind& kind, const Format& format, std::string_view uri,
                                  std::span<const TensorToWrite> tensors, const WriteLayout& layout,
                                  const RunSettings& settings, const NetworkOptions& network) {
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    RL_TRY(staging, StagingFile::create());
    RL_TRY(summary, write_file(format, staging.path(), tensors, layout, settings));
    RL_TRY(published, publish_remote(kind, staging.path(), uri, network));
    summary.how += ", then " + published;
    summary.seconds = std::chrono::duration<double>(Clock::now() - started).count();
    return summary;
}

// Any format to any target it takes: a local path or file:// URI, or a remote URI whose source
// publishes (an object store takes any file; Redis only formats that key their records).
// Refuses encryption for formats that have none.
Result<WriteSummary> write_any(const Format& format, std::string_view uri, std::span<const TensorToWrite> tensors,
                               const WriteLayout& layout, const RunSettings& settings, const NetworkOptions& network) {
    if (layout.encryption != nullptr && !format.may_be_encrypted) {
        return fail(errc::unsupported, std::string(uri) + ": " + std::string(format.title) +
                                           " files are not encrypted; leave WriteOptions::encryption unset");
    }
    if (const SourceKind* kind = source_for(uri)) {
        if (kind->publish == nullptr) {
            return fail(errc::unsupported, std::string(uri) + ": " + std::string(kind->name) +
                                               " sources are read-only; write locally and upload the file");
        }
        if (!kind->publishes_any_file && !format.keys_records) {
            return fail(errc::unsupported, std::string(uri) + ": " + std::string(kind->name) + ":// holds " +
                                               formats::names_text(&Format::keys_records) + " files only, not " +
                                               std::string(format.name));
        }
        if (!settings.sign_key_file.empty()) {
            return fail(errc::unsupported, std::string(uri) +
                                               ": signing while writing takes a local target so far; "
                                               "write locally, sign, and upload both");
        }
        return write_remote(*kind, format, uri, tensors, layout, settings, network);
    }
    RL_TRY(path, local_path_of(uri));
    return write_file(format, path, tensors, layout, settings);
}

// The layout settings safetensors takes (the other formats ignore them), without encryption.
WriteLayout layout_of(const SafetensorsWriteOptions& options) {
    WriteLayout layout;
    layout.alignment_bytes = options.alignment_bytes;
    layout.metadata = options.metadata;
    layout.keep_order = options.keep_order;
    return layout;
}

} // namespace

Result<WriteSummary> write_format(const Format& format, std::string_view uri, std::span<const TensorToWrite> tensors,
                                  const WriteOptions& options, const SafetensorsWriteOptions& layout_options) {
    const auto encryption = write_encryption(options.encryption);
    WriteLayout layout = layout_of(layout_options);
    layout.encryption = encryption ? &*encryption : nullptr;
    return write_any(format, uri, tensors, layout, run_settings(options), options.network);
}

Result<WriteSummary> write_tensorizer(std::string_view uri, std::span<const TensorToWrite> tensors,
                                      const WriteOptions& options) {
    return write_format(tensorizer::format, uri, tensors, options);
}

Result<WriteSummary> write_safetensors(std::string_view uri, std::span<const TensorToWrite> tensors,
                                       const SafetensorsWriteOptions& options) {
    return write_any(safetensors::format, uri, tensors, layout_of(options), run_settings(options), {});
}

Result<WriteSummary> write_torch(std::string_view uri, std::span<const TensorToWrite> tensors,
                                 const WriteOptions& options) {
    return write_format(torch_zip::format, uri, tensors, options);
}

} // namespace ringload
