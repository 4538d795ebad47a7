// bindings/cli/model_load.cpp
#include "model_load.hpp"

#include "commands.hpp"
#include "tensor_json.hpp"

#include "ringload/engine/worker_pool.hpp"
#include "ringload/formats.hpp"
#include "ringload/memory_room.hpp"
#include "ringload/model_signing.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <latch>
#include <mutex>
#include <optional>
#include <semaphore>
#include <thread>

namespace ringload::cli {
namespace {

namespace fs = std::filesystem;

bool is_weight_file(const std::string& path) {
    for (const Format* format : registered_formats()) {
        for (std::string_view extension : format->extensions) {
            if (path.ends_with(extension)) {
                return true;
            }
        }
    }
    return false;
}

// An unsigned folder's weight files, sorted; .git and other hidden folders left out.
Result<std::vector<std::string>> weight_files_in(const std::string& folder) {
    std::vector<std::string> files;
    std::error_code error;
    for (auto it = fs::recursive_directory_iterator(folder, error); !error && it != fs::recursive_directory_iterator();
         it.increment(error)) {
        const std::string name = it->path().filename().string();
        if (it->is_directory() && name.starts_with(".")) {
            it.disable_recursion_pending();
        } else if (it->is_regular_file() && is_weight_file(name)) {
            files.push_back(it->path().string());
        }
    }
    if (error) {
        return fail(errc::io_error, folder + ": " + error.message());
    }
    std::sort(files.begin(), files.end());
    return files;
}

struct FileLoaded {
    std::string path;
    std::size_t tensors = 0;
    std::uint64_t bytes = 0;
    double seconds = 0;
    std::string how;
};

struct Loaded {
    std::vector<FileLoaded> files;
    std::string signer;
    ModelSignatureSummary others; // the signed files no load read
    double seconds = 0;
};

// `opened`: the file's deserializer (or why it did not open); `reads_done` goes to
// LoadOptions::on_reads_done.
Result<FileLoaded> load_one(const ModelLoad& load, const std::string& path, Result<Deserializer> opened,
                            const SignedModel* signed_model, std::function<void()> reads_done) {
    LoadOptions options = load.options;
    options.on_reads_done = std::move(reads_done);
    if (signed_model != nullptr) {
        RL_TRY(file, signed_model->file(path));
        options.signed_file = std::move(file);
    }
    auto model = opened ? opened->load(options) : Result<LoadedModel>(opened.error());
    if (!model && signed_model != nullptr && model.error().code != errc::hash_mismatch) {
        // A changed file may fail its parse before its hash: say that it changed.
        RL_TRY_VOID(signed_model->verify_file(path));
    }
    RL_TRY(loaded, std::move(model));
    return FileLoaded{path, loaded.tensors.size(), loaded.bytes, loaded.seconds, loaded.how};
}

// Files read at once: as many as there are cores, and for a signed model twice that: a file's
// SHA-256 is one sequence of bytes, and the hashing threads (HashStream) take two files' bytes
// per core to run their rounds together (1.45x one file's rate on SHA-NI); it also lets the
// last files end together rather than one core finishing a file alone. Fewer where memory is
// short: each of them, and each load still finishing, holds its file's tensors until it ends.
std::size_t files_read_at_once(const std::vector<std::string>& files, bool signed_model) {
    const std::size_t cores = available_cores(); // the engine's workers' count: taskset and cpusets
    const std::size_t wanted = signed_model ? 2 * cores : cores;
    std::uint64_t largest = 0;
    for (const std::string& path : files) {
        std::error_code error;
        const std::uintmax_t size = fs::file_size(path, error);
        largest = std::max<std::uint64_t>(largest, error ? 0 : size);
    }
    const std::optional<MemoryRoom> room = memory_room();
    if (!room || largest == 0) {
        return wanted;
    }
    return std::clamp<std::uint64_t>(room->bytes / (2 * largest), 1, wanted);
}

// The files, files_read_at_once of them reading at once. The next file starts when a file's
// reads end, not its load, so the disk does not wait for a file's last hashes (up to twice as
// many loads at once, half of them finishing). The first failure cancels the others.
Result<std::vector<FileLoaded>> load_files(const ModelLoad& load, const std::vector<std::string>& files,
                                           const SignedModel* signed_model) {
    const std::size_t lanes = files_read_at_once(files, signed_model != nullptr);
    std::counting_semaphore<> reading(static_cast<std::ptrdiff_t>(lanes));
    std::vector<std::optional<Result<FileLoaded>>> results(files.size());
    std::atomic<std::size_t> next{0};
    CancelToken stop;
    ModelLoad each = load;
    if (each.options.slot_count == 0 && lanes > 1) {
        // The files reading at once share one ring's reads in flight (32, as many as fio needs
        // to keep this VM's disk busy): more only queue each file's next bytes behind the
        // others', and its hash, which wants them in order, waits (4 files of 32 reads each:
        // the first hashes started 60 ms late, the last file's 200 ms late).
        constexpr std::uint32_t reads_in_flight = 32;
        each.options.slot_count = std::max<std::uint32_t>(4, reads_in_flight / static_cast<std::uint32_t>(lanes));
    }
    each.options.cancel = &stop;
    each.options.progress = nullptr; // one bar cannot show loads side by side
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
            results[k] = load_one(each, files[k], std::move(opened), signed_model, reads_over);
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
    std::vector<FileLoaded> loaded;
    std::optional<Error> cancelled; // a load stopped because another failed: report that one
    for (auto& result : results) {
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

Result<Loaded> load_model(const ModelLoad& load) {
    const auto started = std::chrono::steady_clock::now();
    std::error_code error;
    const bool folder = fs::is_directory(load.model, error);
    std::shared_ptr<const SignedModel> signed_model;
    std::vector<std::string> files;
    if (!load.signature.signature.empty()) {
        const SignatureCheck check = load.signature.check(load.options.worker_threads);
        RL_TRY(opened,
               folder ? SignedModel::open(load.model, check, true) : SignedModel::open_for_file(load.model, "", check));
        signed_model = std::move(opened);
        for (const std::string& path : signed_model->paths()) {
            if (is_weight_file(path)) {
                files.push_back(path);
            }
        }
    } else {
        RL_TRY(found, weight_files_in(load.model));
        files = std::move(found);
    }
    if (!folder) {
        files = {load.model};
    }
    if (files.empty()) {
        return fail(errc::not_found, load.model + ": no weight file in it (" + format_names_text() + ")");
    }
    RL_TRY(each, load_files(load, files, signed_model.get()));
    Loaded loaded;
    loaded.files = std::move(each);
    if (signed_model && folder) {
        RL_TRY(others, signed_model->verify_files(files, load.options.worker_threads));
        loaded.others = others;
    }
    if (signed_model) {
        loaded.signer = signed_model->signer();
    }
    loaded.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return loaded;
}

void print_loaded(const Loaded& loaded, bool json) {
    std::uint64_t bytes = 0;
    std::size_t tensors = 0;
    for (const FileLoaded& file : loaded.files) {
        bytes += file.bytes;
        tensors += file.tensors;
    }
    if (json) {
        nlohmann::json out;
        out["bytes"] = bytes;
        out["seconds"] = loaded.seconds;
        out["files"] = nlohmann::json::array();
        for (const FileLoaded& file : loaded.files) {
            out["files"].push_back(
                {{"path", file.path}, {"tensors", file.tensors}, {"bytes", file.bytes}, {"seconds", file.seconds}});
        }
        if (!loaded.signer.empty()) {
            out["signature"] = {
                {"signer", loaded.signer}, {"other_files", loaded.others.files}, {"other_bytes", loaded.others.bytes}};
        }
        std::cout << dump_json(out) << "\n";
        return;
    }
    for (const FileLoaded& file : loaded.files) {
        std::printf("%s: %zu tensors, %llu bytes in %.3f s (%s)\n", file.path.c_str(), file.tensors,
                    static_cast<unsigned long long>(file.bytes), file.seconds, file.how.c_str());
    }
    const double rate = loaded.seconds > 0 ? static_cast<double>(bytes) / loaded.seconds / 1e9 : 0;
    std::printf("loaded %zu files, %zu tensors, %llu bytes in %.3f s: %.2f GB/s\n", loaded.files.size(), tensors,
                static_cast<unsigned long long>(bytes), loaded.seconds, rate);
    if (!loaded.signer.empty()) {
        std::printf("verified while loading, signer: %s; %zu other files hashed (%llu bytes)\n", loaded.signer.c_str(),
                    loaded.others.files, static_cast<unsigned long long>(loaded.others.bytes));
    }
}

} // namespace

int run_model_load(const ModelLoad& load) {
    auto loaded = load_model(load);
    if (!loaded) {
        return report_error(loaded.error().message());
    }
    print_loaded(*loaded, load.json);
    return 0;
}

} // namespace ringload::cli
