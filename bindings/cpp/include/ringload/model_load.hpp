// ringload/model_load.hpp
//
// A model, not a file: a folder's weight files found by one rule, read side by side, verified
// against the model's signature in the same read where there is one, and the folder's other
// signed files hashed after. What `ringload load DIR` runs; the Python package's
// find_weight_files (vLLM, SGLang, the converter) asks the same rule.
//
//     ModelLoadOptions options;
//     options.signature = check; // optional: a signed model
//     RL_TRY(loaded, load_model("/models/llama", options));
//     for (const FileLoaded& file : loaded.files) { use(file.model.tensors); }
#pragma once

#include "ringload/error.hpp"
#include "ringload/model_signing.hpp"
#include "ringload/ringload.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringload {

// A model folder's weight files: every file of the first layout present, in this order
// (vLLM's): *.safetensors (the shards model.safetensors.index.json names, where it is there),
// *.tensors, *.bin (those pytorch_model.bin.index.json names), *.pt; the files a training run
// leaves beside the weights (training_args.bin, optimizer.pt, ...) left out; sorted. Only the
// folder itself is looked in. Fails naming the folder when it is not one or holds no weights,
// and naming the index and the shard when the index names a shard that is not there.
Result<std::vector<std::string>> find_weight_files(const std::string& folder);

struct ModelLoadOptions {
    LoadOptions load; // each file's load (its ring's slot_count: 0 shares 32 reads between the files)
    std::optional<SignatureCheck> signature; // a signed model: each file verified in its read
    // The signed model's folder for one file or a list of files (empty: the file's own folder,
    // a list's first file's); a folder given whole is its own.
    std::string model_folder;
    // How a file is opened (keys, network options); empty: Deserializer::open(path).
    std::function<Result<Deserializer>(const std::string& path)> open;
    bool keep_tensors = true; // false: each file's tensors are freed once counted (a load to measure)
    // Streamed hand-over across the model: each file's tensors as they land (LoadOptions::
    // on_tensor's promises), `file` its place in the files' order. Files load side by side, so
    // calls come from several threads at once: keep it short and thread-safe (queue the
    // tensor). load.on_tensor is replaced by it. load.cancel, when set, stops every file.
    std::function<void(std::size_t file, const StreamedTensor&)> on_tensor;
};

struct FileLoaded {
    std::string path;
    std::size_t tensors = 0;
    std::uint64_t bytes = 0;
    double seconds = 0;
    std::string how;   // LoadedModel::how
    LoadedModel model; // its tensors (empty without ModelLoadOptions::keep_tensors)
};

struct ModelLoaded {
    std::vector<FileLoaded> files; // in find_weight_files' order
    std::string signer;            // a signed model's signer, else empty
    ModelSignatureSummary others;  // a signed folder: its other files, hashed after the load
    double seconds = 0;
};

// What the number of files read at once is decided from (files_at_once_for).
struct FilesAtOnceFacts {
    std::size_t cores = 1;                    // the workers' cores (taskset and cpusets count)
    bool signed_model = false;                // a signed model's files: two per core
    std::uint64_t largest_file = 0;           // the largest file's size; 0: not known (URLs)
    std::optional<std::uint64_t> host_room;   // the process's room in host memory (memory_room)
    std::optional<std::uint64_t> device_room; // a load to a GPU: the device's free memory
};

// The rule alone: one file per core, two per core for a signed model (the hashing threads run
// two files' SHA-256 rounds together on a core), fewer where memory is short. Each file read
// and each load still finishing holds its tensors: in host memory, and on a load to a GPU in
// one device block of the file's size too (a streamed tensor keeps its block until the caller
// drops it), so at most each room over twice the largest file, at least one.
std::size_t files_at_once_for(const FilesAtOnceFacts& facts);

// How many of `files` load_model reads at once onto `device` ("cpu", "cuda", "cuda:N"): the
// rule above with this process's facts (the device's free memory asked of CUDA at the call).
// Python's signed loads into parameters ask the same (_ringload.files_read_at_once).
std::size_t files_read_at_once(const std::vector<std::string>& files, bool signed_model,
                               std::string_view device = "cpu");

// Reads in flight for each of `files_at_once` files read side by side (a model's load, a
// signature's hashing): they share one ring's worth (32, as many as fio needs to keep this
// VM's disk busy: more only queue each file's next bytes behind the others', and its hash,
// which wants them in order, waits), at least 4 each. Where each file's reads land in slots
// held until they are hashed (a signed file read into parameters, which seldom lie at its
// bytes' offsets modulo 4096), each keeps the whole 32 (3.5 GB bench model: 1.51 s against
// 1.75 s with 8 each). Python's loads into parameters ask the same (_ringload.slots_per_file).
std::uint32_t slots_per_file(std::size_t files_at_once, bool slots_held_until_hashed = false);

// Loads `model`, a folder (its find_weight_files) or one file. Files are read side by side,
// files_read_at_once of them (onto the load's device). The first
// failure cancels the others and is the one reported; a file that fails its parse is hashed
// first, so that a changed signed file is reported as changed.
Result<ModelLoaded> load_model(const std::string& model, const ModelLoadOptions& options);

// The same for a model's files given one by one (paths or URIs: the server loaders' `uri`),
// in this order. With a signature the files must be local: their folder (model_folder, else
// the first file's) is checked whole against the statement before any byte is read, each
// file verified in its read and the folder's other files hashed after, as for a folder; a list
// of one file is loaded as load_model(file) loads it.
Result<ModelLoaded> load_model(const std::vector<std::string>& files, const ModelLoadOptions& options);

} // namespace ringload
