// tests/bindings/cancel_load_test.cpp
//
// Loads cancelled from another thread at random points give everything back (issue #27,
// part 3). Each round opens a fixture from its file (tensorizer, raw-key encrypted ones too;
// safetensors and torch zip written from a tensorizer fixture, and the torch fixtures), loads
// it with a random ring, worker count, read mode, prefault, hash check and hand-over, and
// cancels it from a thread of the test after a random delay (up to about one whole load),
// before it starts, or from the hand-over after a random number of tensors. Then:
//   - load() returns errc::cancelled, or the whole model, every tensor's SHA-256 right, when it
//     finished first;
//   - tensors handed over before the cancel are right, while their owner lives;
//   - every ring slot is back when load() returns (BufferRing::slots_leased_in_process);
//   - the same deserializer loads again, whole and right (every other round);
//   - once it and the tensors are gone, no descriptor (/proc/self/fd) or thread
//     (/proc/self/task) is left; in the asan preset LeakSanitizer checks the memory at exit.
// And a load of a (sparse) 1 GiB file cancelled at once lets its arena go without faulting it in.
// Seeded and printed: RINGLOAD_SEED=S repeats the choices of a run, RINGLOAD_CANCEL_ROUNDS=N
// sets the rounds per test (by default 120 and 80, stopping early after 20 s: a test stays under
// 30 s with ASan or TSan on a busy machine).
#include "../support/decryption_support.hpp"
#include "../support/process_counts.hpp"
#include "../support/test_support.hpp"
#include "ringload/engine/buffer_ring.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/ringload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace ringload {
namespace {

using Clock = std::chrono::steady_clock;

struct Fixture {
    std::string path;
    std::optional<DecryptionParams> decryption;
    bool stores_hashes = false;
    bool mappable = false;           // a safetensors file: Placement::mapped_file applies
    std::vector<std::string> sha256; // each tensor's, from a whole load, in file order
    Clock::duration load_time{};     // of a whole load: cancel delays are drawn from [0, 1.2x]
};

std::string sha256_hex(std::span<const std::byte> bytes) {
    const Sha256Digest digest = sha256(bytes);
    return to_hex(digest);
}

unsigned seed_of_run() {
    const char* given = std::getenv("RINGLOAD_SEED");
    const unsigned seed = given != nullptr ? static_cast<unsigned>(std::stoul(given)) : std::random_device{}();
    std::cout << "seed " << seed << " (RINGLOAD_SEED=" << seed << " repeats the run's choices)\n";
    return seed;
}

std::size_t rounds_per_test(std::size_t fallback) {
    const char* given = std::getenv("RINGLOAD_CANCEL_ROUNDS");
    return given != nullptr ? std::stoul(given) : fallback;
}

// Rounds stop early after this long (a slow or busy machine, a sanitizer); unless
// RINGLOAD_CANCEL_ROUNDS asks for a number, which then all run.
Clock::duration time_cap() {
    return std::getenv("RINGLOAD_CANCEL_ROUNDS") != nullptr ? Clock::duration::max() : std::chrono::seconds(20);
}

// A whole load of `path`: the reference every cancelled round is checked against. Its time,
// with a ring of 64 KiB slots (the middle of what rounds pick), bounds the cancel delays.
Fixture reference_of(const std::string& path, std::optional<DecryptionParams> decryption, bool mappable = false) {
    Fixture fixture{path, std::move(decryption)};
    fixture.mappable = mappable;
    OpenOptions open_options;
    open_options.decryption = fixture.decryption;
    auto opened = Deserializer::open(path, open_options);
    if (!opened) {
        ADD_FAILURE() << opened.error().message();
        return fixture;
    }
    fixture.stores_hashes = opened->index().format->stores_hashes;
    LoadOptions options;
    options.compute_sha256 = true;
    options.slot_size_bytes = 65536;
    options.slot_count = 3;
    const auto started = Clock::now();
    auto loaded = opened->load(options);
    fixture.load_time = Clock::now() - started;
    if (!loaded) {
        ADD_FAILURE() << loaded.error().message();
        return fixture;
    }
    for (const auto& tensor : loaded->tensors) {
        fixture.sha256.push_back(tensor.sha256_hex);
    }
    return fixture;
}

// The tensorizer fixtures (not the passphrase one: its Argon2id derivation in open() costs a
// second and 256 MiB, and cancel has nothing to do with it).
std::vector<Fixture> tensorizer_fixtures() {
    std::vector<Fixture> fixtures;
    const auto index = testing::read_json(testing::tensorizer_dir() / "index.json");
    for (const auto& entry : index["files"]) {
        const auto manifest = testing::read_json(testing::tensorizer_dir() / entry["manifest"].get<std::string>());
        const auto& encryption = manifest["encryption"];
        if (!encryption.is_null() && encryption["kind"] != "raw_key") {
            continue;
        }
        std::optional<DecryptionParams> decryption;
        if (!encryption.is_null()) {
            decryption = testing::decryption_for(encryption, encryption["kind"]);
        }
        const auto path = testing::tensorizer_dir() / entry["file"].get<std::string>();
        fixtures.push_back(reference_of(path.string(), std::move(decryption)));
    }
    return fixtures;
}

// safetensors and torch zip: the largest tensorizer fixture (127 tensors, 8 MB) written as
// each, and the torch fixtures.
std::vector<Fixture> safetensors_and_torch_fixtures(const testing::TempDir& dir) {
    std::vector<Fixture> fixtures;
    const auto from = (testing::tensorizer_dir() / "large_mixed_v2.tensors").string();
    auto opened = Deserializer::open(from);
    if (!opened) {
        ADD_FAILURE() << opened.error().message();
        return fixtures;
    }
    auto loaded = opened->load();
    if (!loaded) {
        ADD_FAILURE() << loaded.error().message();
        return fixtures;
    }
    const auto tensors = tensors_to_write(*loaded);
    const auto safetensors_path = (dir.path() / "large_mixed.safetensors").string();
    const auto torch_path = (dir.path() / "large_mixed.pt").string();
    if (auto written = write_safetensors(safetensors_path, tensors); !written) {
        ADD_FAILURE() << written.error().message();
        return fixtures;
    }
    if (auto written = write_torch(torch_path, tensors); !written) {
        ADD_FAILURE() << written.error().message();
        return fixtures;
    }
    fixtures.push_back(reference_of(safetensors_path, std::nullopt, true));
    fixtures.push_back(reference_of(torch_path, std::nullopt));
    for (const char* name : {"checkpoint_misc.pt", "empty_tensor.pt", "handmade_big_endian.pt"}) {
        fixtures.push_back(reference_of((testing::data_dir() / "torch" / name).string(), std::nullopt));
    }
    return fixtures;
}

enum class CancelAt : std::uint8_t {
    before_load, // the token is set before load() is called
    after_delay, // a thread of the test sets it after a random delay
    at_tensor,   // the hand-over sets it after a random number of tensors (on a worker)
};

const char* const cancel_names[] = {"before the load", "after a delay", "at a hand-over"};

struct Tally {
    std::size_t rounds = 0;
    std::size_t cancelled = 0;
    std::size_t whole = 0; // finished before the cancel landed
    std::size_t streamed_checked = 0;
    Clock::duration longest_stop{}; // from cancel() to load() returning
};

template <class T>
const T& pick(std::mt19937_64& random, const std::vector<T>& choices) {
    return choices[random() % choices.size()];
}

LoadOptions random_options(const Fixture& fixture, std::mt19937_64& random) {
    LoadOptions options;
    // 8 KiB slots (twice O_DIRECT's alignment) make even a 260 KB fixture dozens of reads.
    options.slot_size_bytes = pick<std::size_t>(random, {8192, 65536, 1 << 20});
    options.slot_count = pick<std::uint32_t>(random, {2, 3, 8});
    options.worker_threads = 1 + random() % 3;
    options.verify_hashes = fixture.stores_hashes && random() % 2 == 0;
    options.prefault = pick(random, std::vector{Prefault::automatic, Prefault::background, Prefault::on_touch});
    if (fixture.mappable && random() % 4 == 0) {
        options.placement = Placement::mapped_file;
    }
    return options;
}

void expect_whole(const Fixture& fixture, const LoadedModel& model, const std::string& what) {
    ASSERT_EQ(model.tensors.size(), fixture.sha256.size()) << what;
    for (std::size_t k = 0; k < model.tensors.size(); ++k) {
        EXPECT_EQ(sha256_hex(model.tensors[k].bytes), fixture.sha256[k]) << what << ": tensor " << k;
    }
}

// Where one round cancels its load.
struct CancelPlan {
    CancelAt at = CancelAt::before_load;
    Clock::duration delay{};     // after_delay
    std::size_t after_tensors{}; // at_tensor: the hand-over that cancels (1 = the first)
    bool stream = false;         // hand tensors over (always for at_tensor)
};

CancelPlan random_cancel(const Fixture& fixture, std::mt19937_64& random) {
    CancelPlan plan;
    plan.at = static_cast<CancelAt>(random() % 3);
    // Early points more often than late ones: small fixtures finish soon.
    const double share = static_cast<double>(random() % 1000) / 1000;
    plan.delay = std::chrono::duration_cast<Clock::duration>(fixture.load_time * 1.2 * share * share);
    plan.after_tensors = 1 + random() % std::max<std::size_t>(fixture.sha256.size(), 1);
    plan.stream = plan.at == CancelAt::at_tensor || random() % 2 == 0;
    return plan;
}

// Loads with `plan`'s cancel, from a thread of the test or the hand-over, and checks what came
// back: cancelled or whole and right, every slot back, what was handed over right.
void load_and_cancel(const Fixture& fixture, Deserializer& opened, LoadOptions options, const CancelPlan& plan,
                     const std::string& what, Tally& tally) {
    CancelToken token;
    std::mutex mutex;
    std::optional<Clock::time_point> cancelled_at; // guarded by mutex
    auto cancel = [&] {
        std::lock_guard lock(mutex);
        if (!cancelled_at) {
            cancelled_at = Clock::now();
            token.cancel();
        }
    };
    std::vector<StreamedTensor> streamed; // guarded by mutex (hand-overs come one at a time)
    options.cancel = &token;
    if (plan.stream) {
        options.on_tensor = [&](const StreamedTensor& tensor) {
            std::size_t count = 0;
            {
                std::lock_guard lock(mutex);
                streamed.push_back(tensor);
                count = streamed.size();
            }
            if (plan.at == CancelAt::at_tensor && count == plan.after_tensors) {
                cancel();
            }
        };
    }
    if (plan.at == CancelAt::before_load) {
        cancel();
    }
    std::thread canceller;
    if (plan.at == CancelAt::after_delay) {
        canceller = std::thread([&cancel, delay = plan.delay] {
            std::this_thread::sleep_for(delay);
            cancel();
        });
    }
    auto loaded = opened.load(options);
    const auto returned = Clock::now();
    if (canceller.joinable()) {
        canceller.join();
    }
    EXPECT_EQ(BufferRing::slots_leased_in_process(), 0u) << what << ": ring slots still leased after load()";
    if (loaded) {
        ++tally.whole;
        expect_whole(fixture, *loaded, what);
    } else {
        ++tally.cancelled;
        EXPECT_EQ(loaded.error().code, errc::cancelled) << what << ": " << loaded.error().message();
        std::lock_guard lock(mutex);
        EXPECT_TRUE(cancelled_at.has_value()) << what << ": failed without a cancel";
        if (cancelled_at) {
            tally.longest_stop = std::max(tally.longest_stop, returned - *cancelled_at);
        }
    }
    // Handed over means final: the right bytes, kept by their owner after a failed load too.
    for (const auto& tensor : streamed) {
        ASSERT_LT(tensor.position, fixture.sha256.size()) << what;
        EXPECT_EQ(sha256_hex(tensor.tensor.bytes), fixture.sha256[tensor.position])
            << what << ": tensor " << tensor.position << " handed over";
        ++tally.streamed_checked;
    }
}

// One round: open, load with a cancel at a random point, check, maybe load again, let go.
void cancel_round(const Fixture& fixture, std::mt19937_64& random, Tally& tally) {
    const auto baseline = testing::ProcessCounts::now();
    {
        OpenOptions open_options;
        open_options.decryption = fixture.decryption;
        open_options.read_mode = pick(random, std::vector{ReadMode::automatic, ReadMode::direct, ReadMode::buffered});
        auto opened = Deserializer::open(fixture.path, open_options);
        ASSERT_TRUE(opened) << opened.error().message();
        const LoadOptions options = random_options(fixture, random);
        const CancelPlan plan = random_cancel(fixture, random);
        const std::string what = fixture.path + " (cancel " + cancel_names[static_cast<int>(plan.at)] + ", slots " +
                                 std::to_string(options.slot_count) + " x " + std::to_string(options.slot_size_bytes) +
                                 ", workers " + std::to_string(options.worker_threads) + ", verify " +
                                 std::to_string(options.verify_hashes) + ")";
        load_and_cancel(fixture, *opened, options, plan, what, tally);
        if (random() % 2 == 0) {
            auto again = opened->load(options); // the same ring, reused; no cancel, no hand-over
            ASSERT_TRUE(again) << what << ": the load after a cancel: " << again.error().message();
            expect_whole(fixture, *again, what + ", loaded again");
            EXPECT_EQ(BufferRing::slots_leased_in_process(), 0u) << what << ": loaded again";
        }
    }
    // The baseline may count a thread of the round before that was still exiting (an io_uring
    // worker): no more than it, here; no more than at the start, at the end of the run.
    const auto after = testing::ProcessCounts::settled(baseline);
    EXPECT_EQ(after.descriptors, baseline.descriptors) << fixture.path << ": descriptors left behind";
    EXPECT_LE(after.threads, baseline.threads) << fixture.path << ": threads left behind";
    ++tally.rounds;
}

void run_rounds(const std::vector<Fixture>& fixtures, std::size_t rounds) {
    ASSERT_FALSE(fixtures.empty());
    ASSERT_FALSE(::testing::Test::HasFailure()) << "a fixture's whole load failed";
    std::mt19937_64 random(seed_of_run());
    Tally tally;
    const auto at_start = testing::ProcessCounts::now();
    const auto started = Clock::now();
    const Clock::duration cap = time_cap();
    for (std::size_t round = 0; round < rounds && !::testing::Test::HasFatalFailure() && Clock::now() - started < cap;
         ++round) {
        cancel_round(fixtures[random() % fixtures.size()], random, tally);
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    std::cout << tally.rounds << " rounds in " << seconds << " s: " << tally.cancelled << " cancelled, " << tally.whole
              << " whole (finished first), " << tally.streamed_checked
              << " handed-over tensors checked; longest stop after cancel() "
              << std::chrono::duration<double, std::milli>(tally.longest_stop).count() << " ms\n";
    const auto at_end = testing::ProcessCounts::settled(at_start);
    EXPECT_EQ(at_end.descriptors, at_start.descriptors) << "descriptors left behind by the run";
    EXPECT_LE(at_end.threads, at_start.threads) << "threads left behind by the run";
    EXPECT_GT(tally.cancelled, tally.rounds / 4) << "too few rounds were cancelled to test anything";
    // A cancel stops new reads; the reads in flight (a slot or two of a local file) finish.
    EXPECT_LT(tally.longest_stop, std::chrono::seconds(5));
}

TEST(CancelLoad, TensorizerFromAnotherThreadGivesEverythingBack) {
    run_rounds(tensorizer_fixtures(), rounds_per_test(120));
}

TEST(CancelLoad, SafetensorsAndTorchFromAnotherThreadGiveEverythingBack) {
    testing::TempDir dir;
    run_rounds(safetensors_and_torch_fixtures(dir), rounds_per_test(80));
}

// A cancelled load lets its arena go without faulting in the rest of it first: the background
// prefault stops with the arena (it went on through the whole model: a cancel 100 ms into a
// 2 GiB load took 1.7 s and zeroed 2 GiB for nothing). A sparse 1 GiB file, cancelled before
// the load starts: the peak resident memory (VmHWM, reset through /proc/self/clear_refs) may
// rise by a few prefault steps (64 MiB each), not by the model.
TEST(CancelLoad, StopsTheArenasPrefaultInsteadOfWaitingForIt) {
    constexpr std::uint64_t model_bytes = 1ULL << 30;
    testing::TempDir dir;
    const std::string header = R"({"big":{"dtype":"U8","shape":[)" + std::to_string(model_bytes) +
                               R"(],"data_offsets":[0,)" + std::to_string(model_bytes) + "]}}";
    const std::uint64_t header_bytes = (header.size() + 7) / 8 * 8;
    std::vector<std::byte> head(8 + header_bytes, std::byte{' '});
    std::memcpy(head.data(), &header_bytes, 8);
    std::memcpy(head.data() + 8, header.data(), header.size());
    const auto path = testing::write_file(dir.path() / "sparse.safetensors", head);
    std::filesystem::resize_file(path, 8 + header_bytes + model_bytes); // a hole: no disk used

    auto opened = Deserializer::open(path.string());
    ASSERT_TRUE(opened) << opened.error().message();
    CancelToken token;
    token.cancel();
    LoadOptions options;
    options.cancel = &token;
    options.prefault = Prefault::background;
    if (!(std::ofstream("/proc/self/clear_refs") << "5" << std::flush)) {
        GTEST_SKIP() << "cannot reset the peak resident memory (/proc/self/clear_refs)";
    }
    const std::uint64_t resident = testing::status_bytes("VmRSS");
    const auto started = Clock::now();
    auto loaded = opened->load(options);
    const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
    if (!loaded && loaded.error().code == errc::out_of_memory) {
        GTEST_SKIP() << loaded.error().message();
    }
    ASSERT_FALSE(loaded) << "a load cancelled before it began finished";
    EXPECT_EQ(loaded.error().code, errc::cancelled) << loaded.error().message();
    const std::uint64_t rise = testing::status_bytes("VmHWM") - resident;
    std::cout << "cancelled in " << seconds << " s; peak resident memory rose by " << (rise >> 20) << " MiB\n";
    // The prefault thread runs on while the cancelled load returns: a step or two, more on a busy
    // machine (three, 193 MiB, beside a TSan soak); the whole arena without the stop.
    EXPECT_LT(rise, model_bytes * 3 / 4) << "the cancelled load faulted in its whole arena";
}

} // namespace
} // namespace ringload
