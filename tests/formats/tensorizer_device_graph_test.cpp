// tests/formats/tensorizer_device_graph_test.cpp
//
// The tensorizer stage graph's device path (LoadGraphRequest::device: DeviceDestination) on
// a machine without a GPU: HostDeviceLink stands in for the CUDA link (copies later, out of
// order, each holding its slot until done). Every fixture, through tiny and default rings,
// with and without hash verification, must produce its manifest's bytes; encrypted ones must
// decrypt (in the slot, or in staging for cipher chunks that straddle slots); a float16
// conversion must give the CPU path's bytes (which tests/bindings/dtype_test.py checks against
// torch); a wrong key and a corrupted byte must fail the load, not hang it. The CUDA link
// itself runs in tests/gpu.
#include "../support/decryption_support.hpp"
#include "../support/host_device_link.hpp"
#include "../support/slow_then_failing_source.hpp"
#include "../support/test_support.hpp"
#include "formats/tensorizer/key_resolver.hpp"
#include "formats/tensorizer/load_graph.hpp"
#include "formats/tensorizer/reader.hpp"
#include "ringload/engine/executor.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/io/file_source.hpp"
#include "ringload/ringload.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <future>
#include <optional>

namespace ringload {
namespace {

using testing::tensorizer_dir;

// Every released slot is overwritten (engine/src/buffer_ring.cpp), so a slot given back before
// its copy ran shows up as wrong bytes every time. Set before main(), before any ring exists.
const bool slots_poisoned = ::setenv("RINGLOAD_POISON_SLOTS", "1", 1) == 0;

struct DeviceRun {
    Result<void> outcome;
    std::vector<std::vector<std::byte>> memory; // per index tensor, as the "device" holds it
    Index index;
};

std::optional<tensorizer::KeyResolver> keys_for(const nlohmann::json& encryption, bool wrong_key = false) {
    if (encryption.is_null()) {
        return std::nullopt;
    }
    if (encryption["kind"] == "raw_key") {
        auto bytes = testing::bytes_of_hex(encryption["key_hex"].get<std::string>());
        if (wrong_key) {
            bytes[0] ^= std::byte{1};
        }
        return tensorizer::KeyResolver::with_key(SecretKey::from_bytes(bytes).value());
    }
    std::string passphrase = encryption["passphrase"].get<std::string>();
    return tensorizer::KeyResolver::with_passphrase(wrong_key ? passphrase + "x" : passphrase);
}

struct Geometry {
    std::uint32_t slot_count;
    std::size_t slot_size_bytes;
    FileReadMode mode;
};
const Geometry geometries[] = {
    {32, 4 << 20, FileReadMode::automatic}, {2, 8192, FileReadMode::direct}, {3, 4096, FileReadMode::buffered}};
const Geometry tiny = geometries[2];

DeviceRun run_on_device(const std::string& path, const nlohmann::json& encryption, const Geometry& geometry,
                        bool verify, std::optional<DType> dtype, testing::HostDeviceLink& link, bool wrong_key = false,
                        const std::function<void()>& before_run = {}) {
    boost::asio::io_context loop{1};
    DeviceRun run{Result<void>{}, {}, {}};
    auto source = open_file_source(loop, path, {geometry.mode}).value();
    run.index = testing::run_to_completion(loop, tensorizer::read_index(*source)).value();
    auto keys = keys_for(encryption, wrong_key);
    std::vector<TensorDestination> destinations;
    run.memory.resize(run.index.tensors.size());
    for (std::size_t i = 0; i < run.index.tensors.size(); ++i) {
        const TensorInfo& info = run.index.tensors[i];
        const DType loaded = dtype && converts(info.dtype, *dtype) ? *dtype : info.dtype;
        // Garbage first: meta tensors must come out as zeros the link wrote.
        run.memory[i].assign(info.numel() * itemsize(loaded), std::byte{0xAB});
        destinations.push_back({i, run.memory[i].data(), dtype});
    }
    auto graph = tensorizer::build_load_graph(run.index, destinations, {verify, keys ? &*keys : nullptr, &link, path});
    if (!graph) {
        run.outcome = graph.error();
        return run;
    }
    auto ring = BufferRing::create(loop, {geometry.slot_count, geometry.slot_size_bytes}).value();
    WorkerPool pool(2);
    if (before_run) {
        before_run();
    }
    auto stats =
        testing::run_to_completion(loop, run_plan(*source, *ring, pool, graph->stages->plan(), *graph->stages, {}));
    if (!stats) {
        run.outcome = stats.error();
    }
    return run;
}

TEST(TensorizerDeviceGraph, EveryFixtureReachesTheDeviceWithItsManifestsBytes) {
    ASSERT_TRUE(slots_poisoned);
    for (const auto& file : testing::tensorizer_fixture_files()) {
        const auto path = (tensorizer_dir() / file).string();
        const auto manifest = testing::read_json(path + ".json");
        for (const auto& geometry : geometries) {
            for (bool verify : {false, true}) {
                SCOPED_TRACE(file + ", " + std::to_string(geometry.slot_count) + " slots of " +
                             std::to_string(geometry.slot_size_bytes) + (verify ? ", verify" : ""));
                testing::HostDeviceLink link;
                auto run = run_on_device(path, manifest["encryption"], geometry, verify, std::nullopt, link);
                ASSERT_TRUE(run.outcome) << run.outcome.error().message();
                const auto& expected = manifest["tensors"];
                ASSERT_EQ(run.memory.size(), expected.size());
                for (std::size_t i = 0; i < expected.size(); ++i) {
                    EXPECT_EQ(to_hex(sha256(run.memory[i])), expected[i]["sha256"].get<std::string>())
                        << "tensor " << i;
                }
            }
        }
    }
}

TEST(TensorizerDeviceGraph, ConversionOnTheDeviceMatchesTheCpuPath) {
    for (const char* file : {"large_mixed_v2.tensors", "opaque_bf16_c32_v2.tensors", "basic_v1.tensors"}) {
        const auto path = (tensorizer_dir() / file).string();
        if (!std::filesystem::exists(path)) {
            ADD_FAILURE() << "missing fixture " << path;
            continue;
        }
        SCOPED_TRACE(file);
        LoadOptions cpu_options;
        cpu_options.dtype = DType::float16;
        cpu_options.compute_sha256 = true;
        auto cpu = Deserializer::open(path).value().load(cpu_options).value();
        for (const auto& geometry : geometries) {
            testing::HostDeviceLink link;
            auto run = run_on_device(path, nullptr, geometry, true, DType::float16, link);
            ASSERT_TRUE(run.outcome) << run.outcome.error().message();
            std::size_t converting = 0;
            std::uint64_t scratch_total = 0;
            std::uint64_t scratch_largest = 0;
            for (std::size_t i = 0; i < run.memory.size(); ++i) {
                EXPECT_EQ(to_hex(sha256(run.memory[i])), cpu.tensors[i].sha256_hex) << "tensor " << i;
                const TensorInfo& info = run.index.tensors[i];
                if (converts(info.dtype, DType::float16) && info.data_length_bytes > 0) {
                    ++converting;
                    scratch_total += info.data_length_bytes;
                    scratch_largest = std::max(scratch_largest, info.data_length_bytes);
                }
            }
            EXPECT_EQ(link.conversions(), converting);
            // The device memory a load reports (device_peak_bytes) counts the raw bytes waiting
            // for their conversion: at least the largest such tensor, never more than all of them,
            // and none left once the load is over.
            const std::uint64_t peak = link.take_scratch_peak_bytes();
            EXPECT_GE(peak, scratch_largest);
            EXPECT_LE(peak, scratch_total);
            EXPECT_EQ(link.scratch_held_bytes(), 0U);
            EXPECT_EQ(link.take_scratch_peak_bytes(), 0U) << "a second take starts from what is held";
        }
    }
}

TEST(TensorizerDeviceGraph, AWrongKeyFailsTheLoadWithoutAHang) {
    std::size_t encrypted = 0;
    for (const auto& file : testing::tensorizer_fixture_files()) {
        const auto path = (tensorizer_dir() / file).string();
        const auto manifest = testing::read_json(path + ".json");
        if (manifest["encryption"].is_null() || manifest["encryption"]["kind"] != "raw_key") {
            continue;
        }
        ++encrypted;
        SCOPED_TRACE(file);
        testing::HostDeviceLink link;
        auto run = run_on_device(path, manifest["encryption"], tiny, true, std::nullopt, link, true);
        ASSERT_FALSE(run.outcome);
        EXPECT_EQ(run.outcome.error().code, errc::decryption_failed) << run.outcome.error().message();
    }
    EXPECT_GT(encrypted, 0u);
}

TEST(TensorizerDeviceGraph, ACorruptedByteFailsVerification) {
    const auto original = tensorizer_dir() / "large_mixed_v2.tensors";
    auto bytes = testing::read_file(original);
    bytes[bytes.size() - 100] ^= std::byte{0x40}; // in the last tensor's data
    const auto path =
        testing::write_file(std::filesystem::temp_directory_path() / "ringload_device_corrupt.tensors", bytes);
    testing::HostDeviceLink link;
    auto run = run_on_device(path.string(), nullptr, tiny, true, std::nullopt, link);
    std::filesystem::remove(path);
    ASSERT_FALSE(run.outcome);
    EXPECT_EQ(run.outcome.error().code, errc::hash_mismatch) << run.outcome.error().message();
}

// The source ends early (the executor fails the run, not the graph): pieces parked for bytes
// that never come must let their slots go, or the run would wait for them forever. Whether a
// piece is parked at that moment depends on timing; the wrong-key case above parks them every
// time (it hung before the graph's abandon() existed).
TEST(TensorizerDeviceGraph, ATruncatedFileFailsWithoutAHang) {
    for (const char* file : {"large_mixed_v2.tensors", "encrypted_key_v3.tensors"}) {
        SCOPED_TRACE(file);
        const auto original = tensorizer_dir() / file;
        const auto manifest = testing::read_json(original.string() + ".json");
        const auto bytes = testing::read_file(original);
        const auto path =
            testing::write_file(std::filesystem::temp_directory_path() / "ringload_device_truncated.tensors", bytes);
        testing::HostDeviceLink link;
        // Cut after the index was read, so that the reads run into the end.
        auto cut = [&] { std::filesystem::resize_file(path, bytes.size() * 2 / 3); };
        auto run = run_on_device(path.string(), manifest["encryption"], tiny, true, std::nullopt, link, false, cut);
        std::filesystem::remove(path);
        ASSERT_FALSE(run.outcome);
        EXPECT_EQ(run.outcome.error().code, errc::truncated) << run.outcome.error().message();
    }
}

TEST(TensorizerDeviceGraph, AReadFailingAfterEveryWindowWasIssuedFailsWithoutAHang) {
    const std::string path = (tensorizer_dir() / "large_mixed_v2.tensors").string();
    boost::asio::io_context loop{1};
    auto source = open_file_source(loop, path, {FileReadMode::buffered}).value();
    Index index = testing::run_to_completion(loop, tensorizer::read_index(*source)).value();
    std::vector<std::vector<std::byte>> memory(index.tensors.size());
    std::vector<TensorDestination> destinations;
    std::size_t biggest = 0;
    for (std::size_t i = 0; i < index.tensors.size(); ++i) {
        memory[i].resize(index.tensors[i].byte_length + 1);
        destinations.push_back({i, memory[i].data(), std::nullopt});
        if (index.tensors[i].data_length_bytes > index.tensors[biggest].data_length_bytes) {
            biggest = i;
        }
    }
    testing::HostDeviceLink link;
    auto graph = tensorizer::build_load_graph(index, destinations, {true, nullptr, &link, path}).value();
    constexpr std::size_t slot = 64 << 10;
    const auto windows = static_cast<std::uint32_t>((graph.stages->plan().total_bytes() + slot - 1) / slot) + 4;
    const TensorInfo& big = index.tensors[biggest];
    const std::uint64_t big_end = big.data_offset_bytes + big.data_length_bytes;
    testing::SlowThenFailingSource faulty(*source, big.data_offset_bytes, big_end - 3 * slot, big_end + 2 * slot);
    auto ring = BufferRing::create(loop, {windows, slot}).value(); // every window issued at once
    WorkerPool pool(2);
    auto run = std::async(std::launch::async, [&] {
        return testing::run_to_completion(loop, run_plan(faulty, *ring, pool, graph.stages->plan(), *graph.stages, {}));
    });
    if (run.wait_for(std::chrono::seconds(30)) == std::future_status::timeout) {
        ADD_FAILURE() << "the load hung: " << ring->free_count() << " of " << ring->slot_count() << " slots back";
        std::fflush(nullptr);
        std::_Exit(1); // the hung run cannot be joined
    }
    auto outcome = run.get();
    ASSERT_FALSE(outcome);
    EXPECT_NE(outcome.error().message().find("injected read error"), std::string::npos) << outcome.error().message();
}

} // namespace
} // namespace ringload
