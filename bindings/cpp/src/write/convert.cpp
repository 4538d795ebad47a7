// bindings/cpp/src/write/convert.cpp
#include "ringload/convert.hpp"

#include "formats/registry.hpp"
#include "load/streamed_tensors.hpp"
#include "ringload/ringload.hpp"

#include <chrono>

namespace ringload {

std::string target_format_of(std::string_view target_uri) {
    return std::string(formats::for_target(target_uri).name);
}

namespace {

Result<WriteSummary> write_streamed(const Format& format, std::string_view target, const Index& index,
                                    StreamedTensors& feed, const ConvertOptions& options) {
    WriteOptions write;
    write.slot_count = options.write_slot_count;
    write.slot_size_bytes = options.write_slot_size_bytes;
    write.worker_threads = options.worker_threads;
    write.progress = options.progress;
    write.cancel = options.cancel;
    write.feed = &feed;
    write.encryption = options.encryption;
    write.network = options.network;
    write.sign_key_file = options.sign_key_file;
    write.signature_file = options.signature_file;
    SafetensorsWriteOptions layout;
    layout.metadata = index.metadata; // a safetensors source's __metadata__ goes along (to safetensors)
    return write_format(format, target, feed.tensors(), write, layout);
}

} // namespace

Result<ConvertSummary> convert(Deserializer& source, std::string_view target_uri, const ConvertOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    const std::string target(target_uri);
    const Format* format = options.format.empty() ? &formats::for_target(target_uri) : formats::named(options.format);
    if (format == nullptr) {
        return fail(errc::invalid_argument,
                    target + ": unknown format '" + options.format + "' (" + formats::names_text() + ")");
    }
    if (options.encryption && !format->may_be_encrypted) {
        return fail(errc::invalid_argument, target + ": only " + formats::names_text(&Format::may_be_encrypted) +
                                                " files can be encrypted (" + std::string(format->name) +
                                                " has no encryption)");
    }
    if (options.memory_budget_bytes == 0) {
        return fail(errc::invalid_argument, target + ": a memory budget of 0 bytes");
    }
    LoadOptions load;
    load.verify_hashes = options.verify_hashes && source.index().format->stores_hashes;
    load.slot_size_bytes = options.read_slot_size_bytes;
    load.slot_count = options.read_slot_count;
    load.worker_threads = options.worker_threads;
    RL_TRY(feed, StreamedTensors::create(source, load, options.memory_budget_bytes));
    RL_TRY(written, write_streamed(*format, target, source.index(), *feed, options));
    const StreamStats stats = feed->stats();

    ConvertSummary summary;
    summary.format = std::string(format->name);
    summary.tensors = feed->tensors().size();
    summary.bytes_read = stats.bytes_read;
    summary.peak_held_bytes = stats.peak_held_bytes;
    summary.batches = stats.batches;
    summary.read_how = stats.how;
    summary.written = std::move(written);
    summary.written.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return summary;
}

} // namespace ringload
