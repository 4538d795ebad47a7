// tests/tools/soak.cpp: a server's day in one process (issue #27, part 4). Many loads at once
// through the C++ API for a while, of every format and source, some cancelled from another
// thread, some of sources that must fail; every successful load's tensors checked by SHA-256,
// memory, descriptors and threads sampled every second.
//
//   ringload_soak --data DIR [--seconds N] [--concurrency N] [--seed S] [--cancel-percent P]
//                 [--fail-percent P] [--file PATH]... [--remote PATH URL]... [--http2-remote PATH URL]...
//                 [--failing-url URL CATEGORY]... [--s3-endpoint URL] [--ca-file F]
//                 [--ring random|default] [--no-fixtures] [--json FILE]
//
//   --data DIR          tests/data: its tensorizer fixtures (raw-key encrypted ones with their
//                       key) and torch fixtures; safetensors and torch zip files written from
//                       the largest tensorizer fixture; its tensorizer bad/ files as failing
//                       sources (each must fail with its manifest's category), with a missing
//                       file and a safetensors file cut short.
//   --file PATH         another model (any format, a larger one say) to load whole.
//   --remote PATH URL   URL (http://, https://, s3://, redis://) serves the tensors of PATH;
//                       --http2-remote: over HTTP/2 (h2c with prior knowledge on http://).
//   --failing-url URL CATEGORY  a remote source that must fail with CATEGORY ("not found").
//   --cancel-percent P  of the loads get a cancel (20); --fail-percent P read a source that must
//                       fail (15).
//   --ring default      every load with the API's defaults (what a server runs: measurements);
//                       random (the default) picks ring sizes, workers, prefault, placement
//                       and hash checks.
//   --no-fixtures       only --file and remote sources (measurements with larger files).
//
// The expectation of each source is computed once up front: a whole load's SHA-256 per tensor
// (tensorizer fixtures also against their manifests; a remote source against its PATH). A load
// ends ok (every tensor right), cancelled (only where one was asked for), failed as expected,
// or WRONG (other bytes, another failure, a success that should have failed). At the end, with
// every load done and dropped: no ring slot leased, descriptors and threads as at the start,
// resident memory back near the start and no growth from the first half of the run to the
// second. Prints a summary; exits 1 on any WRONG result or growth, 2 on bad arguments.
#include "../support/decryption_support.hpp"
#include "../support/process_counts.hpp"
#include "../support/test_support.hpp"
#include "ringload/engine/buffer_ring.hpp"
#include "ringload/ringload.hpp"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace ringload;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

struct Args {
    double seconds = 30;
    std::size_t concurrency = 4;
    std::uint64_t seed = 0;
    bool seed_given = false;
    unsigned cancel_percent = 20;
    unsigned fail_percent = 15; // of loads, from the sources that must fail
    std::string data_dir;
    bool fixtures = true;
    bool random_ring = true;
    std::vector<std::string> files;
    struct Remote {
        std::string path;
        std::string url;
        bool http2 = false;
    };
    std::vector<Remote> remotes;
    std::vector<std::pair<std::string, std::string>> failing_urls; // URL, category
    NetworkOptions network;
    std::string json_path;
};

[[noreturn]] void usage(const std::string& why) {
    std::cerr << "ringload_soak: " << why
              << "\nusage: ringload_soak --data DIR [--seconds N] [--concurrency N] [--seed S] [--cancel-percent P]"
                 " [--fail-percent P] [--file PATH]... [--remote PATH URL]... [--http2-remote PATH URL]... "
                 "[--failing-url URL CATEGORY]..."
                 " [--s3-endpoint URL] [--ca-file F] [--ring random|default] [--no-fixtures] [--json FILE]\n";
    std::exit(2);
}

Args parse_args(int argc, char** argv) {
    Args args;
    auto next = [&](int& i) -> std::string {
        if (i + 1 >= argc) {
            usage(std::string(argv[i]) + " needs a value");
        }
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "--seconds") {
            args.seconds = std::stod(next(i));
        } else if (flag == "--concurrency") {
            args.concurrency = std::max<std::size_t>(1, std::stoul(next(i)));
        } else if (flag == "--seed") {
            args.seed = std::stoull(next(i));
            args.seed_given = true;
        } else if (flag == "--cancel-percent") {
            args.cancel_percent = std::min(100U, static_cast<unsigned>(std::stoul(next(i))));
        } else if (flag == "--fail-percent") {
            args.fail_percent = std::min(100U, static_cast<unsigned>(std::stoul(next(i))));
        } else if (flag == "--data") {
            args.data_dir = next(i);
        } else if (flag == "--file") {
            args.files.push_back(next(i));
        } else if (flag == "--remote" || flag == "--http2-remote") {
            std::string path = next(i);
            args.remotes.push_back({path, next(i), flag == "--http2-remote"});
        } else if (flag == "--failing-url") {
            std::string url = next(i);
            args.failing_urls.emplace_back(url, next(i));
        } else if (flag == "--s3-endpoint") {
            args.network.s3.endpoint = next(i);
        } else if (flag == "--ca-file") {
            args.network.ca_file = next(i);
        } else if (flag == "--ring") {
            const std::string ring = next(i);
            if (ring != "random" && ring != "default") {
                usage("--ring is random or default");
            }
            args.random_ring = ring == "random";
        } else if (flag == "--no-fixtures") {
            args.fixtures = false;
        } else if (flag == "--json") {
            args.json_path = next(i);
        } else {
            usage("unknown argument " + flag);
        }
    }
    if (args.fixtures && args.data_dir.empty()) {
        usage("--data DIR is needed (or --no-fixtures with --file or --remote)");
    }
    if (!args.seed_given) {
        args.seed = std::random_device{}();
    }
    return args;
}

// One thing a load can be asked to read, and what must come of it.
struct Source {
    std::string uri;
    OpenOptions open_options;
    bool stores_hashes = false;
    bool mappable = false; // a local safetensors file: Placement::mapped_file applies
    // Good sources: each tensor's SHA-256 of a whole load. Failing ones: the category.
    std::vector<std::string> sha256;
    std::optional<std::string> must_fail;
    Clock::duration load_time{}; // of the whole load: cancel delays are drawn from [0, 1.5x]
    std::uint64_t bytes = 0;     // of its tensors
};

std::string category_of(const Error& error) {
    return std::string(errc_name(error.code));
}

// A whole load of `uri`, with each tensor's SHA-256: the expectation of a good source.
std::optional<Source> reference_of(const std::string& uri, OpenOptions open_options) {
    Source source{uri, std::move(open_options)};
    auto opened = Deserializer::open(uri, source.open_options);
    if (!opened) {
        std::cerr << "WRONG: the reference load of " << uri << ": " << opened.error().message() << "\n";
        return std::nullopt;
    }
    source.stores_hashes = opened->index().format->stores_hashes;
    LoadOptions options;
    options.compute_sha256 = true;
    const auto started = Clock::now();
    auto loaded = opened->load(options);
    source.load_time = Clock::now() - started;
    if (!loaded) {
        std::cerr << "WRONG: the reference load of " << uri << ": " << loaded.error().message() << "\n";
        return std::nullopt;
    }
    for (const auto& tensor : loaded->tensors) {
        source.sha256.push_back(tensor.sha256_hex);
    }
    source.bytes = loaded->bytes;
    return source;
}

// A tensorizer fixture's manifest names each tensor's SHA-256 as the real tensorizer loads it.
bool matches_manifest(const Source& source, const fs::path& manifest_path) {
    const auto manifest = testing::read_json(manifest_path);
    const auto& tensors = manifest["tensors"];
    if (tensors.size() != source.sha256.size()) {
        std::cerr << "WRONG: " << source.uri << " loads " << source.sha256.size() << " tensors, its manifest has "
                  << tensors.size() << "\n";
        return false;
    }
    for (std::size_t k = 0; k < tensors.size(); ++k) {
        if (tensors[k]["sha256"].get<std::string>() != source.sha256[k]) {
            std::cerr << "WRONG: " << source.uri << ": tensor " << k << " differs from its manifest\n";
            return false;
        }
    }
    return true;
}

// A manifest's decryption: spec[kind_key] is "raw_key", "passphrase" or null (or spec is null).
std::optional<DecryptionParams> decryption_of(const nlohmann::json& spec, const char* kind_key) {
    if (spec.is_null() || !spec.contains(kind_key) || spec[kind_key].is_null()) {
        return std::nullopt;
    }
    return testing::decryption_for(spec, spec[kind_key]);
}

// The tensorizer fixtures (not the passphrase one: Argon2id costs a second and 256 MiB an open)
// and the torch fixtures.
bool add_fixture_sources(const fs::path& data, std::vector<Source>& sources) {
    const auto index = testing::read_json(data / "tensorizer" / "index.json");
    for (const auto& entry : index["files"]) {
        const fs::path manifest = data / "tensorizer" / entry["manifest"].get<std::string>();
        const auto encryption = testing::read_json(manifest)["encryption"];
        if (!encryption.is_null() && encryption["kind"] != "raw_key") {
            continue;
        }
        OpenOptions open_options;
        open_options.decryption = decryption_of(encryption, "kind");
        auto source = reference_of((data / "tensorizer" / entry["file"].get<std::string>()).string(), open_options);
        if (!source || !matches_manifest(*source, manifest)) {
            return false;
        }
        sources.push_back(std::move(*source));
    }
    for (const char* name : {"checkpoint_misc.pt", "empty_tensor.pt", "handmade_big_endian.pt"}) {
        auto source = reference_of((data / "torch" / name).string(), {});
        if (!source) {
            return false;
        }
        sources.push_back(std::move(*source));
    }
    return true;
}

// The largest tensorizer fixture written as safetensors and as torch zip, and a safetensors
// copy cut 1000 bytes short (a failing source).
bool add_written_sources(const fs::path& data, const fs::path& dir, std::vector<Source>& sources) {
    auto opened = Deserializer::open((data / "tensorizer" / "large_mixed_v2.tensors").string());
    auto loaded = opened ? opened->load() : Result<LoadedModel>(opened.error());
    if (!loaded) {
        std::cerr << "cannot load large_mixed_v2.tensors: " << loaded.error().message() << "\n";
        return false;
    }
    const auto tensors = tensors_to_write(*loaded);
    const std::string safetensors_path = (dir / "large_mixed.safetensors").string();
    const std::string torch_path = (dir / "large_mixed.pt").string();
    auto written = write_safetensors(safetensors_path, tensors);
    auto written_torch = write_torch(torch_path, tensors);
    if (!written || !written_torch) {
        std::cerr << "cannot write the safetensors and torch copies in " << dir << "\n";
        return false;
    }
    for (const auto& path : {safetensors_path, torch_path}) {
        auto source = reference_of(path, {});
        if (!source) {
            return false;
        }
        source->mappable = path == safetensors_path;
        sources.push_back(std::move(*source));
    }
    const fs::path cut = dir / "cut.safetensors";
    fs::copy_file(safetensors_path, cut);
    fs::resize_file(cut, fs::file_size(cut) - 1000);
    sources.push_back({cut.string(), {}, false, false, {}, "truncated"});
    sources.push_back({(dir / "missing.safetensors").string(), {}, false, false, {}, "not found"});
    return true;
}

// tests/data/tensorizer/bad: each file with its manifest's decryption and category (not the
// passphrase case, for the cost of its Argon2id).
void add_bad_sources(const fs::path& data, std::vector<Source>& sources) {
    const auto manifest = testing::read_json(data / "tensorizer" / "bad" / "manifest.json");
    for (const auto& entry : manifest["cases"]) {
        const auto& open_with = entry["open_with"];
        if (open_with["decryption"] == "passphrase") {
            continue;
        }
        Source source{(data / "tensorizer" / "bad" / entry["file"].get<std::string>()).string()};
        source.open_options.decryption = decryption_of(open_with, "decryption");
        source.stores_hashes = true; // loads of these verify hashes: the flipped bytes must show
        source.must_fail = entry["expected_error_category"].get<std::string>();
        sources.push_back(std::move(source));
    }
}

// Remote sources: the first load of each must give what its local twin gives.
bool add_remote_sources(const Args& args, std::vector<Source>& sources) {
    for (const auto& remote : args.remotes) {
        OpenOptions local_options;
        auto local = reference_of(remote.path, local_options);
        OpenOptions open_options;
        open_options.network = args.network;
        if (remote.http2) {
            open_options.network.http_version = HttpVersion::http2;
        }
        auto source = reference_of(remote.url, open_options);
        if (!local || !source) {
            return false;
        }
        if (source->sha256 != local->sha256) {
            std::cerr << "WRONG: " << remote.url << " does not load what " << remote.path << " holds\n";
            return false;
        }
        sources.push_back(std::move(*source));
    }
    for (const auto& [url, category] : args.failing_urls) {
        Source source{url};
        source.open_options.network = args.network;
        source.must_fail = category;
        sources.push_back(std::move(source));
    }
    return true;
}

// --- Running --------------------------------------------------------------------------------

struct Tally {
    std::atomic<std::uint64_t> ok{0};
    std::atomic<std::uint64_t> cancelled{0};
    std::atomic<std::uint64_t> failed_as_expected{0};
    std::atomic<std::uint64_t> wrong{0};
    std::atomic<std::uint64_t> bytes_ok{0};
    std::mutex mutex;
    std::vector<std::string> wrongs; // the first few, guarded by mutex
    Clock::duration longest_stop{};  // from a cancel to load() returning; guarded by mutex
    std::string longest_stop_uri;    // guarded by mutex

    void record_stop(Clock::duration took, const std::string& uri) {
        std::lock_guard lock(mutex);
        if (took > longest_stop) {
            longest_stop = took;
            longest_stop_uri = uri;
        }
    }

    void record_wrong(std::string what) {
        wrong.fetch_add(1);
        std::lock_guard lock(mutex);
        if (wrongs.size() < 20) {
            std::cerr << "WRONG: " << what << "\n";
            wrongs.push_back(std::move(what));
        }
    }
};

// A load's cancel token, and when it was cancelled (for how long the load took to stop).
struct CancelRequest {
    CancelToken token;
    std::atomic<Clock::rep> at{0}; // Clock's count; 0 until cancelled

    void cancel() {
        at.store(Clock::now().time_since_epoch().count());
        token.cancel();
    }
    std::optional<Clock::time_point> cancelled_at() const {
        const Clock::rep count = at.load();
        return count == 0 ? std::nullopt : std::optional(Clock::time_point(Clock::duration(count)));
    }
};

// Cancels loads at their time, from its own thread.
class Canceller {
public:
    Canceller() : thread_([this] { run(); }) {}
    ~Canceller() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_one();
        thread_.join();
    }
    void cancel_at(Clock::time_point when, std::shared_ptr<CancelRequest> request) {
        {
            std::lock_guard lock(mutex_);
            queue_.push({when, std::move(request)});
        }
        wake_.notify_one();
    }

private:
    struct Due {
        Clock::time_point when;
        std::shared_ptr<CancelRequest> request;
        bool operator>(const Due& other) const { return when > other.when; }
    };
    void run() {
        std::unique_lock lock(mutex_);
        while (!stopping_) {
            if (queue_.empty()) {
                wake_.wait(lock);
            } else if (Clock::now() >= queue_.top().when) {
                queue_.top().request->cancel();
                queue_.pop();
            } else {
                // A copy: wait_until reads it again after waking, and a push meanwhile may have
                // moved the queue's elements.
                const Clock::time_point when = queue_.top().when;
                wake_.wait_until(lock, when);
            }
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::priority_queue<Due, std::vector<Due>, std::greater<>> queue_; // guarded by mutex_
    bool stopping_ = false;                                            // guarded by mutex_
    std::thread thread_;
};

template <class T>
T pick(std::mt19937_64& random, std::initializer_list<T> choices) {
    return *(choices.begin() + static_cast<std::ptrdiff_t>(random() % choices.size()));
}

LoadOptions options_for(const Source& source, bool random_ring, std::mt19937_64& random) {
    LoadOptions options;
    options.compute_sha256 = !source.must_fail;
    options.verify_hashes = source.stores_hashes && (source.must_fail || random() % 2 == 0);
    if (!random_ring) {
        return options;
    }
    options.slot_size_bytes = pick<std::size_t>(random, {65536, 1 << 20, 0});
    options.slot_count = pick<std::uint32_t>(random, {2, 8, 0});
    options.worker_threads = random() % 3; // 0: one per core
    options.prefault = pick(random, {Prefault::automatic, Prefault::background, Prefault::on_touch});
    if (source.mappable && random() % 4 == 0) {
        options.placement = Placement::mapped_file;
    }
    return options;
}

// What came of one load, told from its result.
void judge(const Source& source, const Result<LoadedModel>& loaded, bool cancel_asked, Tally& tally) {
    if (!loaded) {
        const Error& error = loaded.error();
        if (error.code == errc::cancelled && cancel_asked) {
            tally.cancelled.fetch_add(1);
        } else if (source.must_fail && category_of(error) == *source.must_fail) {
            tally.failed_as_expected.fetch_add(1);
        } else {
            tally.record_wrong(source.uri + ": " + error.message());
        }
        return;
    }
    if (source.must_fail) {
        tally.record_wrong(source.uri + ": loaded, but must fail with " + *source.must_fail);
        return;
    }
    if (loaded->tensors.size() != source.sha256.size()) {
        tally.record_wrong(source.uri + ": " + std::to_string(loaded->tensors.size()) + " tensors, not " +
                           std::to_string(source.sha256.size()));
        return;
    }
    for (std::size_t k = 0; k < loaded->tensors.size(); ++k) {
        if (loaded->tensors[k].sha256_hex != source.sha256[k]) {
            tally.record_wrong(source.uri + ": tensor " + std::to_string(k) + " (" + loaded->tensors[k].info.name +
                               ") has other bytes");
            return;
        }
    }
    tally.ok.fetch_add(1);
    tally.bytes_ok.fetch_add(loaded->bytes);
}

// One load: open, load (perhaps cancelled after a delay or at a tensor), judge, let go.
void one_load(const Source& source, const Args& args, std::mt19937_64& random, Canceller& canceller, Tally& tally) {
    auto opened = Deserializer::open(source.uri, source.open_options);
    if (!opened) {
        judge(source, opened.error(), false, tally);
        return;
    }
    LoadOptions options = options_for(source, args.random_ring, random);
    const bool cancel_asked = random() % 100 < args.cancel_percent;
    auto request = std::make_shared<CancelRequest>();
    options.cancel = &request->token;
    if (cancel_asked && random() % 3 == 0 && !source.sha256.empty()) {
        // At a random tensor's hand-over, on the worker that completes it.
        const std::size_t at = random() % source.sha256.size();
        auto handed = std::make_shared<std::atomic<std::size_t>>(0);
        options.on_tensor = [at, handed, request](const StreamedTensor&) {
            if (handed->fetch_add(1) == at) {
                request->cancel();
            }
        };
    } else if (cancel_asked) {
        const auto delay = std::chrono::duration_cast<Clock::duration>(source.load_time * 1.5 *
                                                                       (static_cast<double>(random() % 1000) / 1000));
        canceller.cancel_at(Clock::now() + delay, request);
    }
    auto loaded = opened->load(options);
    if (const auto cancelled_at = request->cancelled_at(); cancelled_at && !loaded) {
        tally.record_stop(Clock::now() - *cancelled_at, source.uri);
    }
    judge(source, loaded, cancel_asked, tally);
}

// --- Sampling -------------------------------------------------------------------------------

struct Sample {
    double seconds = 0;
    std::uint64_t rss_bytes = 0;
    std::size_t descriptors = 0;
    std::size_t threads = 0;
};

class Sampler {
public:
    explicit Sampler(Clock::time_point started) : started_(started), thread_([this] { run(); }) {}
    ~Sampler() { stop(); }
    void stop() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_one();
        if (thread_.joinable()) {
            thread_.join();
        }
    }
    const std::vector<Sample>& samples() const { return samples_; } // after stop()

private:
    void run() {
        std::unique_lock lock(mutex_);
        while (!stopping_) {
            const auto counts = testing::ProcessCounts::now();
            samples_.push_back({std::chrono::duration<double>(Clock::now() - started_).count(),
                                testing::status_bytes("VmRSS"), counts.descriptors, counts.threads});
            wake_.wait_for(lock, std::chrono::seconds(1));
        }
    }

    Clock::time_point started_;
    std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false; // guarded by mutex_
    std::vector<Sample> samples_;
    std::thread thread_;
};

double mib(std::uint64_t bytes) {
    return static_cast<double>(bytes) / (1 << 20);
}

struct Run {
    Clock::time_point started;
    double seconds = 0;
    std::uint64_t rss_start = 0;
    std::uint64_t rss_end = 0;
    testing::ProcessCounts counts_start;
    testing::ProcessCounts counts_end;
    std::uint64_t slots_leased_end = 0;
    std::vector<Sample> samples;
};

void run_workers(const Args& args, const std::vector<Source>& sources, Tally& tally, Run& run) {
    std::vector<const Source*> good;
    std::vector<const Source*> failing;
    for (const auto& source : sources) {
        (source.must_fail ? failing : good).push_back(&source);
    }
    auto pick_source = [&](std::mt19937_64& random) -> const Source& {
        const bool fail = !failing.empty() && (good.empty() || random() % 100 < args.fail_percent);
        const auto& from = fail ? failing : good;
        return *from[random() % from.size()];
    };
    Canceller canceller;
    Sampler sampler(run.started);
    const auto deadline =
        run.started + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(args.seconds));
    std::vector<std::thread> workers;
    for (std::size_t w = 0; w < args.concurrency; ++w) {
        workers.emplace_back([&, w] {
            std::mt19937_64 random(args.seed * 1000003 + w);
            while (Clock::now() < deadline) {
                one_load(pick_source(random), args, random, canceller, tally);
            }
        });
    }
    for (auto& worker : workers) {
        worker.join();
    }
    run.seconds = std::chrono::duration<double>(Clock::now() - run.started).count();
    sampler.stop();
    run.samples = sampler.samples();
}

// --- Judging the run ------------------------------------------------------------------------

// Under AddressSanitizer resident memory says nothing about leaks: freed blocks wait in its
// quarantine and its allocator does not give pages back. Its LeakSanitizer checks at exit.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool memory_is_the_sanitizers = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool memory_is_the_sanitizers = true;
#else
constexpr bool memory_is_the_sanitizers = false;
#endif
#else
constexpr bool memory_is_the_sanitizers = false;
#endif

// Growth: the median resident memory of the second half of the samples against the first
// half's (the first two seconds left out: rings and arenas of the first loads, malloc's
// arenas). Medians, and two rings of slack: how many loads hold their 128 MiB ring at a sample
// varies (a leaked ring per cancelled load would grow by far more).
std::optional<std::string> memory_growth(const Run& run) {
    std::vector<std::uint64_t> steady;
    for (const auto& sample : run.samples) {
        if (sample.seconds >= 2) {
            steady.push_back(sample.rss_bytes);
        }
    }
    if (steady.size() < 4) {
        return std::nullopt;
    }
    auto median = [](std::vector<std::uint64_t> values) {
        std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2), values.end());
        return values[values.size() / 2];
    };
    const auto half = static_cast<std::ptrdiff_t>(steady.size() / 2);
    const std::uint64_t first = median({steady.begin(), steady.begin() + half});
    const std::uint64_t second = median({steady.begin() + half, steady.end()});
    if (second > first + std::max<std::uint64_t>(first / 4, 256 << 20)) {
        return "resident memory grew from " + std::to_string(mib(first)) + " MiB (median of the first half) to " +
               std::to_string(mib(second)) + " MiB (of the second)";
    }
    return std::nullopt;
}

std::vector<std::string> leftovers(const Args& args, const Run& run) {
    std::vector<std::string> problems;
    if (run.slots_leased_end != 0) {
        problems.push_back(std::to_string(run.slots_leased_end) + " ring slots still leased");
    }
    if (run.counts_end.descriptors > run.counts_start.descriptors) {
        problems.push_back("descriptors " + std::to_string(run.counts_start.descriptors) + " -> " +
                           std::to_string(run.counts_end.descriptors));
    }
    if (run.counts_end.threads > run.counts_start.threads) {
        problems.push_back("threads " + std::to_string(run.counts_start.threads) + " -> " +
                           std::to_string(run.counts_end.threads));
    }
    if (memory_is_the_sanitizers) {
        return problems; // ASan keeps freed memory in its quarantine: LeakSanitizer judges leaks
    }
    // What malloc keeps of its per-thread arenas after malloc_trim, and a little more.
    const std::uint64_t slack = (64 << 20) + args.concurrency * (4 << 20);
    if (run.rss_end > run.rss_start + slack) {
        problems.push_back("resident memory " + std::to_string(mib(run.rss_start)) + " MiB at the start, " +
                           std::to_string(mib(run.rss_end)) + " MiB at the end");
    }
    if (auto growth = memory_growth(run)) {
        problems.push_back(*growth);
    }
    return problems;
}

void print_summary(const Args& args, const Tally& tally, const Run& run, const std::vector<std::string>& problems) {
    std::uint64_t peak_rss = testing::status_bytes("VmHWM");
    std::size_t peak_descriptors = 0;
    std::size_t peak_threads = 0;
    for (const auto& sample : run.samples) {
        peak_descriptors = std::max(peak_descriptors, sample.descriptors);
        peak_threads = std::max(peak_threads, sample.threads);
    }
    const std::uint64_t loads =
        tally.ok.load() + tally.cancelled.load() + tally.failed_as_expected.load() + tally.wrong.load();
    std::cout << "soak: " << run.seconds << " s, concurrency " << args.concurrency << ", seed " << args.seed
              << "\n  loads " << loads << " (" << static_cast<double>(loads) / run.seconds << "/s): ok "
              << tally.ok.load() << ", cancelled " << tally.cancelled.load() << ", failed as expected "
              << tally.failed_as_expected.load() << ", WRONG " << tally.wrong.load() << "\n  bytes checked "
              << mib(tally.bytes_ok) << " MiB (" << mib(tally.bytes_ok) / run.seconds << " MiB/s)"
              << "\n  resident memory: start " << mib(run.rss_start) << " MiB, peak " << mib(peak_rss) << " MiB, end "
              << mib(run.rss_end) << " MiB; peak over start per concurrent load "
              << mib(peak_rss > run.rss_start ? peak_rss - run.rss_start : 0) / static_cast<double>(args.concurrency)
              << " MiB\n  longest stop after a cancel "
              << std::chrono::duration<double, std::milli>(tally.longest_stop).count() << " ms ("
              << tally.longest_stop_uri << ")\n  descriptors: start " << run.counts_start.descriptors << ", peak "
              << peak_descriptors << ", end " << run.counts_end.descriptors << "\n  threads: start "
              << run.counts_start.threads << ", peak " << peak_threads << ", end " << run.counts_end.threads
              << "\n  ring slots leased at the end " << run.slots_leased_end << "\n";
    for (const auto& problem : problems) {
        std::cout << "  GROWTH: " << problem << "\n";
    }
    if (!args.json_path.empty()) {
        nlohmann::json out = {
            {"seconds", run.seconds},
            {"concurrency", args.concurrency},
            {"seed", args.seed},
            {"loads", loads},
            {"ok", tally.ok.load()},
            {"cancelled", tally.cancelled.load()},
            {"failed_as_expected", tally.failed_as_expected.load()},
            {"wrong", tally.wrong.load()},
            {"bytes_ok", tally.bytes_ok.load()},
            {"longest_stop_seconds", std::chrono::duration<double>(tally.longest_stop).count()},
            {"rss_start", run.rss_start},
            {"rss_peak", peak_rss},
            {"rss_end", run.rss_end},
            {"descriptors", {run.counts_start.descriptors, peak_descriptors, run.counts_end.descriptors}},
            {"threads", {run.counts_start.threads, peak_threads, run.counts_end.threads}},
            {"problems", problems}};
        std::ofstream(args.json_path) << out.dump(1) << "\n";
    }
}

std::optional<std::vector<Source>> prepare_sources(const Args& args, const fs::path& dir) {
    std::vector<Source> sources;
    if (args.fixtures) {
        const fs::path data = args.data_dir;
        if (!add_fixture_sources(data, sources) || !add_written_sources(data, dir, sources)) {
            return std::nullopt;
        }
        add_bad_sources(data, sources);
    }
    for (const auto& path : args.files) {
        auto source = reference_of(path, {});
        if (!source) {
            return std::nullopt;
        }
        sources.push_back(std::move(*source));
    }
    if (!add_remote_sources(args, sources)) {
        return std::nullopt;
    }
    if (sources.empty()) {
        std::cerr << "ringload_soak: no sources\n";
        return std::nullopt;
    }
    return sources;
}

} // namespace

int main(int argc, char** argv) {
    const Args args = parse_args(argc, argv);
    const testing::TempDir dir;
    const auto sources = prepare_sources(args, dir.path());
    if (!sources) {
        return 1;
    }
    std::size_t failing = 0;
    for (const auto& source : *sources) {
        failing += source.must_fail ? 1 : 0;
    }
    std::cout << "soak: " << sources->size() << " sources (" << failing << " that must fail), " << args.concurrency
              << " loads at once for " << args.seconds << " s, seed " << args.seed << " (--seed " << args.seed
              << " repeats its choices)\n"
              << std::flush;

    testing::start_sanitizer_symbolizer();
    (void)malloc_trim(0);
    // The peak from here on, not the set-up's (Linux 4.0+; else the process's whole life).
    std::ofstream("/proc/self/clear_refs") << "5";
    Run run;
    run.rss_start = testing::status_bytes("VmRSS");
    run.counts_start = testing::ProcessCounts::now();
    run.started = Clock::now();
    Tally tally;
    run_workers(args, *sources, tally, run);
    run.slots_leased_end = BufferRing::slots_leased_in_process();
    run.counts_end = testing::ProcessCounts::settled(run.counts_start, std::chrono::seconds(10));
    (void)malloc_trim(0);
    run.rss_end = testing::status_bytes("VmRSS");

    const auto problems = leftovers(args, run);
    print_summary(args, tally, run, problems);
    return tally.wrong == 0 && problems.empty() ? 0 : 1;
}
