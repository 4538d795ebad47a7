// bindings/cpp/include/ringload/ringload.hpp
//
// The C++ API for embedding ringload in a server: open a file (a URI) in any of the three
// formats (tensorizer, safetensors, torch.save zip; told apart by content), read its index,
// load all or some tensors into host or GPU memory with progress and cancellation.
//
//     auto opened = ringload::Deserializer::open("/models/gpt2.tensors");
//     if (!opened) { log(opened.error().message()); return; }
//     ringload::LoadOptions options;
//     options.verify_hashes = true;
//     options.filter = [](const ringload::TensorInfo& t) { return t.name.starts_with("transformer."); };
//     auto loaded = opened->load(options);          // Result<LoadedModel>
//     for (const auto& tensor : loaded->tensors) { use(tensor.info.name, tensor.bytes); }
//
// Or streamed: each tensor handed over as soon as its bytes are final, long before load()
// returns (a worker thread calls; queue the tensor and its owner for your own thread):
//
//     options.on_tensor = [&](const ringload::StreamedTensor& t) { queue.push(t); };
//
// Tensors live in one host arena owned by LoadedModel (and by any copy of its shared_ptr), or,
// with LoadOptions::device = "cuda:N", in one device allocation owned the same way: chunks go
// from the page-locked ring to the GPU with async copies, and host memory stays at the ring's
// size whatever the model's. Callers may instead give each tensor's destination.
// Thread: a Deserializer is used by one thread at a time; distinct ones are independent.
#pragma once

#include "ringload/convert.hpp"
#include "ringload/crypto_params.hpp"
#include "ringload/error.hpp"
#include "ringload/formats.hpp"
#include "ringload/progress.hpp"
#include "ringload/serializer.hpp"
#include "ringload/tensor_info.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ringload {

class HostArena;

enum class ReadMode : std::uint8_t {
    automatic, // O_DIRECT for cold files, the page cache for cached ones
    direct,
    buffered,
};

// Bytes that no registered source reaches, read by the caller's function (the Python package's
// fsspec file systems: hf://, abfs://, gcsfs, ...): the engine's stages run after it as after
// any source. `read` fills dst from offset_bytes and returns how many bytes it put there (fewer
// only at the end of the file); it is called on the load's I/O thread, one call at a time.
struct ExternalReader {
    std::uint64_t size_bytes = 0;
    std::function<Result<std::size_t>(std::uint64_t offset_bytes, std::span<std::byte> dst)> read;
    std::string how; // "fsspec HTTPFileSystem": for summaries
};

struct OpenOptions {
    ReadMode read_mode = ReadMode::automatic;
    // For encrypted files. Given for a file that is not encrypted, open() fails (as tensorizer
    // does). A passphrase's Argon2id key is derived here, not during load().
    std::optional<DecryptionParams> decryption;
    // http://, https://, s3:// and redis:// sources: connections, timeouts, retries, TLS, S3.
    NetworkOptions network;
    // The ring is allocated, pre-faulted and registered here, so that loads start reading at
    // once. False: by the first load that reads through it (a file whose loads map its pages
    // never needs one: 12-25 ms of a 0.45 s from_pretrained, docs/benchmarks.md).
    bool ring_at_open = true;
    // The format the caller means ("safetensors"), or "" for any: a file that no format
    // recognises is then refused with what this format finds wrong in its first bytes. The
    // format is still detected from the bytes, never taken from this.
    std::string expected_format;
    // Set: open() reads through it, and the URI is only the name messages use.
    std::optional<ExternalReader> external_reader;
};

// When a host load faults its destination memory in (the kernel zeroes each fresh page).
enum class Prefault {
    // In the background where workers copy ring slots into the tensors (files); not where a
    // network source receives straight into them: there the receive's own page faults zero
    // each page just before the copy writes it, while it is still in cache, and a thread
    // zeroing ahead made the receive copy write cold memory (slower over HTTP/1.1 and h2c:
    // docs/benchmarks.md, "HTTP/1.1 on loopback"). Except in a VM whose host backs fresh
    // memory lazily (memory_backing.hpp): there a first touch also waits for the host, and on
    // touch the receive thread waited for each.
    automatic,
    background, // always from a background thread running ahead of the copies
    on_touch,   // never ahead: each page when first written
};

// Where a host load's tensors land.
enum class Placement {
    // The arena, for now: the file's pages were the fastest at best but far less steady than
    // the arena or safetensors on a quiet machine (docs/benchmarks.md, "A load in a server's
    // conditions"), so they are used only when asked for, or when the arena would not fit in
    // the memory the process may still take (MemAvailable, memory cgroup limits) and the file
    // can stay in its pages; a load that fits neither is refused (errc::out_of_memory).
    automatic,
    arena, // the load's own memory, filled through the ring (O_DIRECT reads, worker copies)
    // The file mapped copy-on-write, its pages read ahead by the kernel and handed over as
    // they arrive: no copy, no memory of the load's own. Only for an unencrypted local file on
    // the CPU whose tensors load as stored (no dtype, verify_hashes or destination) and lie at
    // multiples of their element size (safetensors); anything else fails saying why. The
    // tensors stay the file's pages, as safetensors' own mapped tensors do: a file rewritten in
    // place (not replaced by a rename) while they live shows its new bytes through them, and
    // one truncated makes reading them fault. Take `arena` for tensors kept that long.
    mapped_file,
};

struct StreamedTensor;
struct SignedFile; // ringload/model_signing.hpp

struct LoadOptions {
    // Bytes per read (a multiple of 4096); 0: the source's choice, 4 MiB for files and 8 MiB
    // for http (fewer, longer range requests were faster: docs/benchmarks.md).
    std::size_t slot_size_bytes = 0;
    std::uint32_t slot_count = 0;   // ring slots, i.e. reads in flight; 0: 128 MiB of slots
    std::size_t worker_threads = 0; // 0: one per available core
    bool verify_hashes = false;     // check stored CRC32 and SHA-256
    bool compute_sha256 = false;    // fill LoadedTensor::sha256_hex
    // The kernel's zeroing of fresh pages is the largest CPU cost of a host load from a file
    // (see docs/benchmarks.md): there a background thread faults the arena in ahead of the
    // copies, so the workers only copy.
    Prefault prefault = Prefault::automatic;
    Placement placement = Placement::automatic;
    std::function<bool(const TensorInfo&)> filter; // empty: every tensor
    // The wanted tensors by their position in index().tensors, ascending, without repeats:
    // a load of a few tensors of a large index (safe_open's get_tensor on a mixture of experts)
    // costs what they cost, not a filter call per tensor of the file. Empty: `filter` decides.
    std::vector<std::size_t> tensors;
    // "cpu", "cuda" (device 0) or "cuda:N". A build or machine without CUDA fails the load
    // with a message that says why.
    std::string device = "cpu";
    // Floating tensors (float64, float32, float16, bfloat16) become this type on the way
    // (tensorizer's dtype=): on the GPU by a kernel, on the CPU by the workers. Other tensors
    // keep their stored type.
    std::optional<DType> dtype;
    // Where each wanted tensor's bytes go: memory on `device` of at least numel * itemsize of
    // its loaded dtype bytes, e.g. a module's existing parameter. Called once per wanted
    // tensor, in index order, with the tensor as loaded. Null (or an empty function):
    // the load allocates. The memory must outlive the load; LoadedModel does not own it.
    std::function<std::byte*(const TensorInfo&)> destination;
    // torch zip files, whose tensors are views of shared storages: a non-contiguous view
    // (transposed, expanded, stepped) comes out in C order (a copy) when true; when false it
    // stays a view of its storage, LoadedTensor::info.strides saying how to step through it.
    // Contiguous views are never copied: tensors that share a storage share its memory.
    bool contiguous = true;
    ProgressCallback progress;
    const CancelToken* cancel = nullptr;
    // Streamed hand-over: called once per wanted tensor as soon as its bytes are final (read,
    // decrypted, hash-verified with verify_hashes, converted to `dtype`, gathered into C order
    // for a torch view with `contiguous`; on a GPU once its async copies and conversion have
    // completed), long before load() returns: tensors come in the order they complete, which
    // is close to file order but not exactly it. A tensor whose hash fails is never handed over.
    //
    // Thread: a load worker, the GPU link's completion thread, or (tensors without data) the
    // thread that called load(); one call at a time. Keep it short (queue the tensor for
    // another thread): the workers or the GPU completions wait meanwhile. It may read the
    // bytes (on a GPU from any stream: their copies have completed), keep
    // StreamedTensor::owner, and cancel the load through `cancel`; it must not call into this
    // Deserializer. Tensors handed over stay valid when the load fails later, for as long as
    // the caller holds their owner; load() still returns the failure.
    std::function<void(const StreamedTensor&)> on_tensor;
    // A file of a signed model (SignedModel::file): the load reads the whole file, whatever
    // it wants of it, hashes it in file order and fails (errc::hash_mismatch, naming the file
    // and shard) when it differs from the signed statement. Nothing goes to on_tensor before
    // the whole file checked out; bytes read into memory the caller gave (`destination`) are
    // there even when the load fails: discard them then. The tensors are never left in the
    // file's pages (Placement::mapped_file is refused): what is handed out is what was hashed.
    std::shared_ptr<const SignedFile> signed_file;
    // Called once, on the load's I/O thread, when every byte the load reads has come in: the
    // workers may still be hashing, decrypting, converting or copying it. A caller loading many
    // files starts the next file's reads here, so that the disk does not wait for this file's
    // last hash (`ringload load DIR` does). Not called when the load fails or is cancelled
    // first, nor by loads that read nothing through the engine (Placement::mapped_file): treat
    // load()'s return as the end of the reads too. Keep it short; it must not call into this
    // Deserializer.
    std::function<void()> on_reads_done;
};

struct LoadedTensor {
    // dtype and byte_length as loaded (after LoadOptions::dtype); strides empty for C order,
    // else (torch views with LoadOptions::contiguous false) the element steps per dimension.
    TensorInfo info;
    // From the tensor's first element: byte_length bytes in C order, or, for a strided view,
    // up to the end of its last element. Little-endian; device memory on a GPU.
    std::span<std::byte> bytes;
    std::string sha256_hex; // with LoadOptions::compute_sha256
};

// One tensor handed over during the load (LoadOptions::on_tensor).
struct StreamedTensor {
    LoadedTensor tensor;      // as LoadedModel::tensors will hold it (sha256_hex empty)
    std::size_t position = 0; // its place in LoadedModel::tensors (file order)
    std::string device;       // "cpu" or "cuda:N"
    // Owns the bytes (the load's host arena or device block; null where the caller gave the
    // memory): they stay valid while any copy of it, or of the LoadedModel, lives, whether or
    // not load() has returned or failed.
    std::shared_ptr<const void> owner;
};

struct LoadedModel {
    std::string device = "cpu";               // where the tensors are: "cpu" or "cuda:N"
    std::shared_ptr<HostArena> arena;         // owns the tensors' bytes on the CPU
    std::shared_ptr<std::byte> device_memory; // owns them on a GPU (freed when the last copy dies)
    std::vector<LoadedTensor> tensors;        // in file order
    std::uint64_t bytes = 0;                  // tensor bytes produced
    std::uint64_t bytes_read = 0;             // bytes read from the source
    std::uint64_t bytes_in_place = 0;         // of those, read straight into the tensors (no copy)
    double seconds = 0;                       // the load, without compute_sha256
    // Device loads: the most device memory the load held at once (its tensors' block plus
    // conversion scratch; not the CUDA context). 0 on the CPU.
    std::uint64_t device_peak_bytes = 0;
    std::string how; // "O_DIRECT io_uring", ...
};

// The loaded tensors as a writer takes them (names, types, module_idx and the bytes in the
// model's memory, host or device), to store them again: `write_tensorizer(out, tensors_to_write(model))`.
std::vector<TensorToWrite> tensors_to_write(const LoadedModel& model);

// One dimension of a slice: elements [start, stop) (step 1; start <= stop <= the extent).
struct SliceRange {
    std::uint64_t start = 0;
    std::uint64_t stop = 0;
};

// Part of one tensor: one range per dimension (none for a 0-d tensor). The slice comes out in
// C order, its shape stop - start per dimension (zero-size allowed).
struct SliceRequest {
    std::size_t tensor_index = 0; // into Index::tensors
    std::vector<SliceRange> ranges;
    // Memory on LoadOptions::device for the slice's bytes as loaded (C order, LoadOptions::dtype
    // applied), owned by the caller, e.g. a parameter's rows: on the CPU the runs are read
    // straight there; on a device the slice is cut on the host and uploaded there (no device
    // memory of the load's own for it). The result's tensor points at it. Null: the load's own.
    std::byte* destination = nullptr;
};

// How load_slices plans its reads.
struct SliceReadOptions {
    // Gaps between the slices' runs up to this many bytes are read through (one range instead of
    // two: a request or read saved, the gap's bytes read). Empty: automatic (slice_load.cpp).
    std::optional<std::uint64_t> merge_gap_bytes;
};

class Deserializer {
public:
    // A local path, file:// URI, http:// or https:// URL (HTTP/1.1 or HTTP/2 range reads),
    // s3://bucket/key (signed range reads; OpenOptions::network.s3) or redis://host/prefix.
    static Result<Deserializer> open(std::string_view uri, OpenOptions options = {});

    Deserializer(Deserializer&&) noexcept;
    Deserializer& operator=(Deserializer&&) noexcept;
    ~Deserializer();

    const Index& index() const noexcept;
    const std::string& uri() const noexcept;
    // The file or URL as messages name it: a remote URI without its password.
    const std::string& source_name() const;
    Result<LoadedModel> load(const LoadOptions& options = {});
    // Reads only the bytes of the requested slices, all of them in one pass through the ring
    // (bindings/cpp/src/load/slice_load.cpp): LoadedModel::tensors holds one C-order tensor per
    // request, in request order (a tensor may be asked for more than once), and bytes_read
    // what came from the source. Of `options`, filter, destination, contiguous and
    // compute_sha256 do not apply. Encrypted files and verify_hashes read the covering whole
    // tensors (their boxes and hashes cover whole tensors) and cut the slices out in memory.
    Result<LoadedModel> load_slices(std::span<const SliceRequest> requests, const LoadOptions& options = {},
                                    const SliceReadOptions& read_options = {});

private:
    struct Impl;
    explicit Deserializer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

} // namespace ringload
