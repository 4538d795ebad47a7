// bindings/cpp/src/load/model_load.cpp
//
// load_model (ringload/model_load.hpp): a model's weight files read side by side, each with
// LoadOptions::signed_file for a signed model, so that its single read is also its
// verification; then the folder's other signed files (configs, tokenizers) hashed on every core.
// The model's signature and file list are checked before any byte is read; any failure ends
// the load before anything is reported as loaded.
#include "ringload/model_load.hpp"

#include "gpu/device_memory.hpp"
#include "gpu/device_name.hpp"
#include "ringload/engine/buffer_ring.hpp"
#include "ringload/engine/worker_pool.hpp"
#include "ringload/io/source_registry.hpp"
#include "ringload/memory_room.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <latch>
#include <mutex>
#include <optional>
#include <semaphore>
#include <thread>

namespace ringload {
namespace {

namespace fs = std::filesystem;

// `opened`: the file's deserializer (or why it did not open); `reads_done` goes to
// LoadOptions::on_reads_done.
Result<FileLoaded> load_one(const ModelLoadOptions& load, std::size_t k, const std::string& path,
                            Result<Deserializer> opened, const SignedModel* signed_model,
                            std::function<void()> reads_done) {
    LoadOptions options = load.load;
    options.on_reads_done = std::move(reads_done);
    if (load.on_tensor) {
        options.on_tensor = [&load, k](const StreamedTensor& tensor) { load.on_tensor(k, tensor); };
    }
    if (signed_model != nullptr) {
        RL_TRY(file, signed_model->file(path));
        options.signed_file = std::move(file);
    }
    if (!opened) {
        // A load of a signed file says why itself (load_signed); a failed open, here.
        return options.signed_file
                   ? failure_of_signed_file(*options.signed_file, std::move(opened).error(), options.worker_threads)
                   : std::move(opened).error();
    }
    RL_TRY(loaded, opened->load(options));
    FileLoaded file{path, loaded.tensors.size(), loaded.bytes, loaded.seconds, loaded.how, {}};
    if (load.keep_tensors) {
        file.model = std::move(loaded);
    }
    return file;
}

// Each file's load options when `lanes` files read at once.
ModelLoadOptions options_side_by_side(const ModelLoadOptions& load, std::size_t lanes, const CancelToken& stop) {
    ModelLoadOptions each = load;
    if (each.load.slot_count == 0 && lanes > 1) {
        each.load.slot_count = slots_per_file(lanes); // (4 files of 32 reads each: the first hashes
                                                      // started 60 ms late, the last file's 200 ms late)
    }
    each.load.cancel = &stop;
    each.load.progress = nullptr; // one bar cannot show loads side by side
    if (!each.open) {
        each.open = [](const std::string& path) { return Deserializer::open(path); };
    }
    return each;
}

// The first failure that was not a cancellation (a load stopped because another failed), else
// a cancellation (a file that never started counts as cancelled: the model is not whole), else
// the files in order.
Result<std::vector<FileLoaded>> gathered(std::vector<std::optional<Result<FileLoaded>>>& results,
                                         const std::vector<std::string>& files) {
    std::vector<FileLoaded> loaded;
    std::optional<Error> cancelled;
    for (std::size_t k = 0; k < results.size(); ++k) {
        auto& result = results[k];
        if (!result && !cancelled) {
            cancelled = fail(errc::cancelled, files[k] + ": the model's load was cancelled before this file started");
        }
        if (result && !*result && result->error().code != errc::cancelled) {
            return std::move(*result).error();
        }
        if (result && !*result) {
            cancelled = result->error();
        } else if (result) {
            loaded.push_back(std::move(**result));
        }
    }
    if (cancelled) {
        return *cancelled;
    }
    return loaded;
}

// The files, files_read_at_once of them reading at once. The next file starts when a file's
// reads end, not its load, so the disk does not wait for a file's last hashes (up to twice as
// many loads at once, half of them finishing). The first failure cancels the others.
Result<std::vector<FileLoaded>> load_files(const ModelLoadOptions& load, const std::vector<std::string>& files,
                                           const SignedModel* signed_model) {
    const std::size_t lanes = files_read_at_once(files, signed_model != nullptr, load.load.device);
    std::counting_semaphore<> reading(static_cast<std::ptrdiff_t>(lanes));
    std::vector<std::optional<Result<FileLoaded>>> results(files.size());
    std::atomic<std::size_t> next{0};
    CancelToken stop;
    // The caller's cancel stops every file (each file's load watches `stop`).
    std::optional<CancelToken::Subscription> asked;
    if (load.load.cancel != nullptr) {
        asked.emplace(load.load.cancel->subscribe([&stop] { stop.cancel(); }));
    }
    const ModelLoadOptions each = options_side_by_side(load, lanes, stop);
    // The first files to read are all opened before any of them reads: a header read queued
    // behind another file's first 32 reads started its file up to 60 ms late, to end alone.
    const std::size_t first_wave = std::min(files.size(), lanes);
    std::latch first_wave_opened(static_cast<std::ptrdiff_t>(first_wave));
    auto work = [&] {
        for (std::size_t k = next++; k < files.size() && !stop.cancelled(); k = next++) {
            // Opened before its turn to read: its header read would otherwise wait behind the
            // reads of the files loading now (70 ms behind 256 MiB of them).
            Result<Deserializer> opened = each.open(files[k]);
            if (k < first_wave) {
                first_wave_opened.arrive_and_wait();
            }
            reading.acquire();
            std::once_flag once; // the file stops reading when its reads end, or its load does
            const auto reads_over = [&] { std::call_once(once, [&] { reading.release(); }); };
            results[k] = load_one(each, k, files[k], std::move(opened), signed_model, reads_over);
            reads_over();
            if (!*results[k]) {
                stop.cancel();
            }
        }
    };
    std::vector<std::thread> threads;
    for (std::size_t t = 1; t < std::min(files.size(), 2 * lanes); ++t) {
        threads.emplace_back(work);
    }
    work();
    for (std::thread& thread : threads) {
        thread.join();
    }
    return gathered(results, files);
}

// The model's weight files (a signed model's: each must be in its statement, which load_one's
// SignedModel::file checks before the file is read).
Result<std::vector<std::string>> files_of(const std::string& model, bool folder) {
    if (!folder) {
        return std::vector<std::string>{model};
    }
    return find_weight_files(model);
}

// The signature's check, its hashing threads the load's where it names none.
SignatureCheck signature_of(const ModelLoadOptions& options) {
    SignatureCheck check = *options.signature;
    check.threads = check.threads != 0 ? check.threads : options.load.worker_threads;
    return check;
}

// The signed model a list of files belongs to: their folder (ModelLoadOptions::model_folder,
// else the first file's), opened whole, so that its file list is the statement's before any
// byte is read, as for a folder given whole; a list of one file is that file's load
// (SignedModel::open_for_file: a signature of the file alone, or of its folder). `paths`
// become the files' local paths.
Result<std::shared_ptr<const SignedModel>> signed_list(std::vector<std::string>& paths,
                                                       const ModelLoadOptions& options) {
    for (std::string& path : paths) {
        if (source_for(path) != nullptr) {
            return fail(errc::invalid_argument,
                        path + ": signatures are verified for local files so far, not for a remote source");
        }
        RL_TRY(local, local_path_of(path));
        path = std::move(local);
    }
    if (paths.size() == 1) { // as load_model(file): a signature of the file alone, or of its folder
        return SignedModel::open_for_file(paths.front(), options.model_folder, signature_of(options));
    }
    std::string folder = options.model_folder;
    if (folder.empty()) {
        folder = fs::path(paths.front()).parent_path().string();
    }
    return SignedModel::open(folder.empty() ? "." : folder, signature_of(options), true);
}

// The files loaded (each verified in its read where the model is signed), then, where
// `others_too`, the signed folder's other files hashed.
Result<ModelLoaded> load_signed_or_not(const std::vector<std::string>& files, const ModelLoadOptions& options,
                                       const std::shared_ptr<const SignedModel>& signed_model, bool others_too,
                                       std::chrono::steady_clock::time_point started) {
    RL_TRY(each, load_files(options, files, signed_model.get()));
    ModelLoaded loaded;
    loaded.files = std::move(each);
    if (signed_model && others_too) {
        RL_TRY(others, signed_model->verify_files(files, options.load.worker_threads));
        loaded.others = others;
    }
    if (signed_model) {
        loaded.signer = signed_model->signer();
    }
    loaded.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return loaded;
}

} // namespace

// A signed model's files two per core: a file's SHA-256 is one sequence of bytes, and the
// hashing threads (HashStream) take two files' bytes per core to run their rounds together
// (1.45x one file's rate on SHA-NI); it also lets the last files end together rather than one
// core finishing a file alone.
std::uint32_t slots_per_file(std::size_t files_at_once, bool slots_held_until_hashed) {
    if (slots_held_until_hashed || files_at_once <= 1) {
        return slot_count_default;
    }
    return std::max<std::uint32_t>(4, slot_count_default / static_cast<std::uint32_t>(files_at_once));
}

std::size_t files_at_once_for(const FilesAtOnceFacts& facts) {
    const std::size_t cores = std::max<std::size_t>(facts.cores, 1);
    std::size_t at_once = facts.signed_model ? 2 * cores : cores;
    if (facts.largest_file == 0) {
        return at_once;
    }
    for (const std::optional<std::uint64_t>& room : {facts.host_room, facts.device_room}) {
        if (room) {
            at_once = std::clamp<std::uint64_t>(*room / (2 * facts.largest_file), 1, at_once);
        }
    }
    return at_once;
}

std::size_t files_read_at_once(const std::vector<std::string>& files, bool signed_model, std::string_view device) {
    FilesAtOnceFacts facts;
    facts.cores = available_cores(); // the engine's workers' count: taskset and cpusets
    facts.signed_model = signed_model;
    for (const std::string& path : files) {
        std::error_code error;
        const std::uintmax_t size = fs::file_size(path, error);
        facts.largest_file = std::max<std::uint64_t>(facts.largest_file, error ? 0 : size);
    }
    if (const std::optional<MemoryRoom> room = memory_room()) {
        facts.host_room = room->bytes;
    }
    auto ordinal = gpu::parse_device(device);
    if (ordinal && *ordinal != gpu::cpu_ordinal) {
        // Not known (no driver, a device that is not there): the load itself will say why.
        if (auto free_bytes = gpu::device_free_bytes(*ordinal)) {
            facts.device_room = *free_bytes;
        }
    }
    return files_at_once_for(facts);
}

Result<ModelLoaded> load_model(const std::vector<std::string>& files, const ModelLoadOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    if (files.empty()) {
        return fail(errc::invalid_argument, "no files to load");
    }
    std::shared_ptr<const SignedModel> signed_model;
    std::vector<std::string> paths = files;
    if (options.signature) {
        RL_TRY(opened, signed_list(paths, options));
        signed_model = std::move(opened);
    }
    return load_signed_or_not(paths, options, signed_model, paths.size() > 1, started);
}

Result<ModelLoaded> load_model(const std::string& model, const ModelLoadOptions& options) {
    const auto started = std::chrono::steady_clock::now();
    std::error_code error;
    const bool folder = fs::is_directory(model, error);
    std::shared_ptr<const SignedModel> signed_model;
    if (options.signature) {
        RL_TRY(opened, folder ? SignedModel::open(model, signature_of(options), true)
                              : SignedModel::open_for_file(model, options.model_folder, signature_of(options)));
        signed_model = std::move(opened);
    }
    RL_TRY(files, files_of(model, folder));
    return load_signed_or_not(files, options, signed_model, folder, started);
}

} // namespace ringload
