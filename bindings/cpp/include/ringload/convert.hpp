// bindings/cpp/include/ringload/convert.hpp
//
// One model file into another format (tensorizer, safetensors, torch.save zip), or into the
// same one re-encrypted, streamed: the writer lays the target out from the source's index,
// then the tensors are read in batches through the source's ring just ahead of the writer and
// let go as soon as they are written, so memory holds about `memory_budget_bytes` of tensor
// data (or the largest tensor, if larger; plus what the writes in flight read), never the
// whole model:
//
//     auto source = ringload::Deserializer::open("/models/llama.pt").value();
//     ringload::ConvertOptions options;
//     options.format = "safetensors";
//     auto converted = ringload::convert(source, "/models/llama.safetensors", options);
//
// The target appears under its name only when complete (as with the writers); a source that
// fails part way (a truncated file, a hash mismatch, a server gone) fails the conversion with
// the source's error and leaves no target behind.
// Thread: blocking; the source is used by this call alone while it runs.
#pragma once

#include "ringload/crypto_params.hpp"
#include "ringload/error.hpp"
#include "ringload/io/network_options.hpp"
#include "ringload/progress.hpp"
#include "ringload/serializer.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ringload {

class Deserializer;

struct ConvertOptions {
    // "tensorizer", "safetensors" or "torch"; empty: from the target's extension
    // (target_format_of).
    std::string format;
    bool verify_hashes = true;                  // a tensorizer source's stored hashes
    std::optional<EncryptionParams> encryption; // tensorizer targets only
    std::uint64_t memory_budget_bytes = 1ULL << 30;
    // The source's reads: bytes per read and reads in flight (0: the source's choice).
    std::size_t read_slot_size_bytes = 0;
    std::uint32_t read_slot_count = 0;
    // The target's writes: bytes per write and writes in flight. Tensors that the writes in
    // flight read are held beyond the budget: at most this ring's size and two tensors more.
    std::size_t write_slot_size_bytes = 4 << 20;
    std::uint32_t write_slot_count = 32;
    std::size_t worker_threads = 0; // 0: one per available core
    NetworkOptions network;         // s3:// and redis:// tensorizer targets
    ProgressCallback progress;      // bytes written
    const CancelToken* cancel = nullptr;
    std::string sign_key_file;  // sign the target from the hashes of its write (WriteOptions::sign_key_file)
    std::string signature_file; // where; empty: the target + ".sig"
};

struct ConvertSummary {
    std::string format; // the target's
    std::size_t tensors = 0;
    std::uint64_t bytes_read = 0;      // from the source
    std::uint64_t peak_held_bytes = 0; // the most tensor bytes in memory at once
    std::size_t batches = 0;           // loads of the source
    std::string read_how;              // "O_DIRECT io_uring", ...
    WriteSummary written;              // seconds: the whole conversion
};

// ".safetensors" -> safetensors; ".pt", ".pth", ".bin" -> torch; anything else tensorizer.
std::string target_format_of(std::string_view target_uri);

Result<ConvertSummary> convert(Deserializer& source, std::string_view target_uri, const ConvertOptions& options = {});

} // namespace ringload
