// bindings/cpp/include/ringload/serializer.hpp
//
// Writing tensorizer files, byte-compatible with CoreWeave's tensorizer (2.11.1), and
// safetensors and torch.save zip files:
//
//     std::vector<ringload::TensorToWrite> tensors;
//     tensors.push_back({{"wte.weight"}, ringload::DType::float16, {50257, 1600}, wte_bytes});
//     ringload::WriteOptions options;
//     options.encryption = ringload::EncryptionParams::from_key_file("/run/secrets/model-key").value();
//     auto written = ringload::write_tensorizer("/models/gpt2.tensors", tensors, options);
//
// The file appears under its name only when complete and on disk: until then the bytes go to an
// unnamed temporary file in the same directory, and a failed, cancelled or killed write leaves
// the previous file (if any) as it was and nothing else behind. The data version is the lowest
// the content needs (1; 2 for bf16 and other types numpy lacks; 3 encrypted; 4 meta tensors).
// The same holds for write_safetensors and write_torch (local targets only).
// Thread: blocking; distinct calls are independent.
#pragma once

#include "ringload/crypto_params.hpp"
#include "ringload/engine/write_feed.hpp"
#include "ringload/error.hpp"
#include "ringload/format.hpp"
#include "ringload/io/network_options.hpp"
#include "ringload/progress.hpp"
#include "ringload/tensor_info.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ringload {

struct WriteOptions {
    std::optional<EncryptionParams> encryption; // XSalsa20-Poly1305 in 2 MiB chunks
    std::uint32_t slot_count = 32;              // ring slots: writes in flight
    std::size_t slot_size_bytes = 4 << 20;      // bytes per write (a multiple of 4096)
    std::size_t worker_threads = 0;             // 0: one per available core
    ProgressCallback progress;
    const CancelToken* cancel = nullptr;
    NetworkOptions network; // s3:// and redis:// targets
    // Null: the tensors' bytes are in memory for the whole call. Else they are brought in by
    // the feed while the write runs (`convert`); it must outlive the call.
    WriteFeed* feed = nullptr;
    // Sign the file (OpenSSF Model Signing, the key method, as a one-file model) with this PEM
    // ECDSA private key, from the SHA-256 computed while the windows were filled (torch zip,
    // whose CRC32s are patched in after: from the written file's pages). Local targets only.
    // The signature goes to signature_file, or the target's path + ".sig".
    std::string sign_key_file;
    std::string signature_file;
};

struct WriteSummary {
    std::uint64_t file_bytes = 0;
    std::uint64_t tensor_bytes = 0; // data bytes stored (meta tensors store none)
    std::uint32_t data_version = 0;
    double seconds = 0;         // until the file is durable and in place
    std::string how;            // "O_DIRECT io_uring", ...
    std::string signature_file; // with WriteOptions::sign_key_file: where the signature is
    std::string sha256_hex;     // with it: the file's SHA-256 that was signed
};

// A local path or file:// URI. The tensors' bytes must stay alive and unchanged during the call
// (with a feed: from when the feed has them in place until it lets them go).
Result<WriteSummary> write_tensorizer(std::string_view uri, std::span<const TensorToWrite> tensors,
                                      const WriteOptions& options = {});

// safetensors: the WriteOptions that apply, and the file's own.
struct SafetensorsWriteOptions {
    std::size_t alignment_bytes = 8; // where the data starts: 8 (as the reference) or 64
    // "__metadata__": string to string, in this order.
    std::vector<std::pair<std::string, std::string>> metadata;
    // false: data sorted as safetensors sorts it (wider dtypes first, then by name), which keeps
    // every tensor aligned to its item size and gives the bytes safetensors.torch.save_file
    // gives; true: in the order given.
    bool keep_order = false;
    std::uint32_t slot_count = 32;
    std::size_t slot_size_bytes = 4 << 20;
    std::size_t worker_threads = 0;
    ProgressCallback progress;
    const CancelToken* cancel = nullptr;
    WriteFeed* feed = nullptr;  // as WriteOptions::feed
    std::string sign_key_file;  // as WriteOptions::sign_key_file
    std::string signature_file; // as WriteOptions::signature_file
};

// A safetensors file (https://github.com/huggingface/safetensors). A tensor's name is its path
// joined with "." ({"model", "layers", 0, "w"} -> "model.layers.0.w"). Refused: meta tensors,
// duplicate names, and dtypes safetensors has no name for (complex, float8 *fnuz / e8m0).
// A local path or file:// URI.
Result<WriteSummary> write_safetensors(std::string_view uri, std::span<const TensorToWrite> tensors,
                                       const SafetensorsWriteOptions& options = {});

// A torch.save zip file of a state dict that torch.load(path, weights_only=True) reads: an
// OrderedDict of name -> tensor (a nested path nests dicts, list indexes nest lists), each
// tensor with its own storage, requires_grad False; meta tensors without one. Every torch since
// 1.6 reads it, except files with float8 / uint16-64 / complex32 tensors (torch >= 2.1) or meta
// tensors of bf16, bool or unsigned types (newer than 1.13). Refused: encryption. A local path
// or file:// URI; `network` does not apply.
Result<WriteSummary> write_torch(std::string_view uri, std::span<const TensorToWrite> tensors,
                                 const WriteOptions& options = {});

// Any registered format (ringload/formats.hpp: format_named("torch")), as the call above for
// it: the run settings, `encryption` (formats that may be encrypted; refused otherwise) and
// `network` (formats that write remote) from `options`; a safetensors file's own layout
// (alignment, __metadata__, order) from `layout`, whose run settings are not used.
Result<WriteSummary> write_format(const Format& format, std::string_view uri, std::span<const TensorToWrite> tensors,
                                  const WriteOptions& options = {}, const SafetensorsWriteOptions& layout = {});

} // namespace ringload
