// tests/formats/tensorizer_device_graph_test.cpp
//
// The tensorizer stage graph's device path (LoadGraphOptions::device) on a machine without a
// GPU: HostDeviceLink stands in for the CUDA link (copies later, out of order, each holding
// its slot until done). Every fixture, through tiny and default rings, with and without hash
// verification, must produce its manifest's bytes; encrypted ones must decrypt (in the slot,
// or in staging for cipher chunks that straddle slots); a float16 conversion must give the
// CPU path's bytes (which tests/bindings/dtype_test.py checks against torch); a wrong key and
// a corrupted byte must fail the load, not hang it. The CUDA link itself runs in tests/gpu.
#include "../support/decryption_support.hpp"
#include "../support/host_device_link.hpp"
#include "../support/test_support.hpp"
#include "formats/tensorizer/key_resolver.hpp"
#include "formats/tensorizer/load_graph.hpp"
#include "formats/tensorizer/reader.hpp"
#include "ringload/engine/executor.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/io/file_source.hpp"
#include "ringload/ringload.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <optional>

namespace ringload {
namespace {

using testing::tensorizer_dir;

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
    std::vector<tensorizer::TensorDestination> destinations;
    run.memory.resize(run.index.tensors.size());
    for (std::size_t i = 0; i < run.index.tensors.size(); ++i) {
        const TensorInfo& info = run.index.tensors[i];
        const DType loaded = dtype && converts(info.dtype, *dtype) ? *dtype : info.dtype;
        // Garbage first: meta tensors must come out as zeros the link wrote.
        run.memory[i].assign(info.numel() * itemsize(loaded), std::byte{0xAB});
        destinations.push_back({i, run.memory[i].data(), dtype});
    }
    auto graph = tensorizer::LoadGraph::create(run.index, destinations, {verify, keys ? &*keys : nullptr, &link}, path);
    if (!graph) {
        run.outcome = graph.error();
        return run;
    }
    auto ring = BufferRing::create(loop, {geometry.slot_count, geometry.slot_size_bytes}).value();
    WorkerPool pool(2);
    if (before_run) {
        before_run();
    }
    auto stats = testing::run_to_completion(loop, run_plan(*source, *ring, pool, (*graph)->plan(), **graph, {}));
    if (!stats) {
        run.outcome = stats.error();
    }
    return run;
}

TEST(TensorizerDeviceGraph, EveryFixtureReachesTheDeviceWithItsManifestsBytes) {
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
            for (std::size_t i = 0; i < run.memory.size(); ++i) {
                EXPECT_EQ(to_hex(sha256(run.memory[i])), cpu.tensors[i].sha256_hex) << "tensor " << i;
                const TensorInfo& info = run.index.tensors[i];
                converting += converts(info.dtype, DType::float16) && info.data_length_bytes > 0 ? 1 : 0;
            }
            EXPECT_EQ(link.conversions(), converting);
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
// time (it hung before LoadGraph::abandon existed).
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

} // namespace
} // namespace ringload
