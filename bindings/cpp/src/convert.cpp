// bindings/cpp/src/convert.cpp
#include "ringload/convert.hpp"

#include "ringload/ringload.hpp"
#include "streamed_tensors.hpp"

#include <chrono>

namespace ringload {

std::string target_format_of(std::string_view target_uri) {
    if (target_uri.ends_with(".safetensors")) {
        return "safetensors";
    }
    if (target_uri.ends_with(".pt") || target_uri.ends_with(".pth") || target_uri.ends_with(".bin")) {
        return "torch";
    }
    return "tensorizer";
}

namespace {

// The settings every writer's options share.
template <class WriteOptionsOf>
WriteOptionsOf write_options(const ConvertOptions& options, StreamedTensors& feed) {
    WriteOptionsOf write;
    write.slot_count = options.write_slot_count;
    write.slot_size_bytes = options.write_slot_size_bytes;
    write.worker_threads = options.worker_threads;
    write.progress = options.progress;
    write.cancel = options.cancel;
    write.feed = &feed;
    return write;
}

Result<WriteSummary> write_streamed(const std::string& format, std::string_view target, const Index& index,
                                    StreamedTensors& feed, const ConvertOptions& options) {
    if (format == "safetensors") {
        auto write = write_options<SafetensorsWriteOptions>(options, feed);
        write.metadata = index.metadata; // a safetensors source's __metadata__ goes along
        return write_safetensors(target, feed.tensors(), write);
    }
    auto write = write_options<WriteOptions>(options, feed);
    write.encryption = options.encryption;
    write.network = options.network;
    if (format == "torch") {
        return write_torch(target, feed.tensors(), write);
    }
    return write_tensorizer(target, feed.tensors(), write);
}

} // namespace

Result<ConvertSummary> convert(Deserializer& source, std::string_view target_uri, const ConvertOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    const std::string target(target_uri);
    const std::string format = options.format.empty() ? target_format_of(target_uri) : options.format;
    if (format != "tensorizer" && format != "safetensors" && format != "torch") {
        return fail(errc::invalid_argument,
                    target + ": unknown format '" + format + "' (tensorizer, safetensors or torch)");
    }
    if (options.encryption && format != "tensorizer") {
        return fail(errc::invalid_argument,
                    target + ": only tensorizer files can be encrypted (" + format + " has no encryption)");
    }
    if (options.memory_budget_bytes == 0) {
        return fail(errc::invalid_argument, target + ": a memory budget of 0 bytes");
    }
    LoadOptions load;
    load.verify_hashes = options.verify_hashes && source.index().format == "tensorizer"; // others store none
    load.slot_size_bytes = options.read_slot_size_bytes;
    load.slot_count = options.read_slot_count;
    load.worker_threads = options.worker_threads;
    RL_TRY(feed, StreamedTensors::create(source, load, options.memory_budget_bytes));
    RL_TRY(written, write_streamed(format, target, source.index(), *feed, options));
    const StreamStats stats = feed->stats();

    ConvertSummary summary;
    summary.format = format;
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
