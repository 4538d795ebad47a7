// tests/gpu/gpu_load_test.cpp
//
// The GPU path through the public API, on a machine with an NVIDIA GPU (label `gpu`; every
// test skips with the reason where no device can be used, e.g. "no usable CUDA device" or
// "built without CUDA"). Run them under compute-sanitizer with scripts/gpu_check.sh.
//   - every fixture loads to cuda:0 with its manifest's sha256 (of the device bytes copied
//     back), through several ring geometries, with and without verification, encrypted too;
//   - dtype conversion on the GPU gives the CPU path's bytes (which match torch's casts);
//   - caller-provided device destinations are filled in place, with nothing allocated;
//   - a model that lives on the GPU is written (device-to-host through the ring) and reads
//     back with the manifest's values, plain and encrypted;
//   - a wrong key and a file cut short fail the load (no hang) and the next load works;
//   - safetensors and torch zip files load to the device with the CPU path's bytes (torch
//     views share device memory; big-endian storages are swapped in the slots);
//   - the streamed hand-over gives every tensor once, as the model holds it (LoadOptions::on_tensor);
//   - a device that does not exist is refused with its name.
#include "../support/decryption_support.hpp"
#include "../support/test_support.hpp"
#include "ringload/device.hpp"
#include "ringload/engine/dtype_convert.hpp"
#include "ringload/ringload.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

namespace ringload {
namespace {

using testing::tensorizer_dir;

#define SKIP_WITHOUT_GPU()                             \
    do {                                               \
        auto devices = cuda_device_count();            \
        if (!devices) {                                \
            GTEST_SKIP() << devices.error().message(); \
        }                                              \
    } while (false)

OpenOptions open_options_for(const nlohmann::json& manifest, ReadMode mode = ReadMode::automatic) {
    OpenOptions options;
    options.read_mode = mode;
    const auto& encryption = manifest["encryption"];
    if (!encryption.is_null()) {
        options.decryption = testing::decryption_for(encryption, encryption["kind"]);
    }
    return options;
}

void expect_manifest_hashes(const LoadedModel& model, const nlohmann::json& manifest) {
    const auto& expected = manifest["tensors"];
    ASSERT_EQ(model.tensors.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(model.tensors[i].sha256_hex, expected[i]["sha256"].get<std::string>()) << "tensor " << i;
    }
}

TEST(GpuLoad, EveryFixtureLoadsToTheDeviceWithItsManifestsBytes) {
    SKIP_WITHOUT_GPU();
    struct Geometry {
        std::uint32_t slot_count;
        std::size_t slot_size_bytes;
        ReadMode mode;
    };
    const Geometry geometries[] = {
        {32, 4 << 20, ReadMode::automatic}, {2, 8192, ReadMode::direct}, {3, 4096, ReadMode::buffered}};
    for (const auto& file : testing::tensorizer_fixture_files()) {
        const auto path = (tensorizer_dir() / file).string();
        const auto manifest = testing::read_json(path + ".json");
        for (const auto& geometry : geometries) {
            auto opened = Deserializer::open(path, open_options_for(manifest, geometry.mode));
            ASSERT_TRUE(opened) << opened.error().message();
            for (bool verify : {false, true}) {
                SCOPED_TRACE(file + ", " + std::to_string(geometry.slot_count) + " slots" + (verify ? ", verify" : ""));
                LoadOptions options;
                options.device = "cuda:0";
                options.slot_count = geometry.slot_count;
                options.slot_size_bytes = geometry.slot_size_bytes;
                options.verify_hashes = verify;
                options.compute_sha256 = true;
                auto loaded = opened->load(options);
                ASSERT_TRUE(loaded) << loaded.error().message();
                EXPECT_EQ(loaded->device, "cuda:0");
                EXPECT_EQ(loaded->arena, nullptr); // no host copy of the model
                expect_manifest_hashes(*loaded, manifest);
            }
        }
    }
}

TEST(GpuLoad, ConversionOnTheGpuMatchesTheCpuPath) {
    SKIP_WITHOUT_GPU();
    for (const char* file : {"large_mixed_v2.tensors", "opaque_bf16_c32_v2.tensors", "meta_v4.tensors"}) {
        const auto path = (tensorizer_dir() / file).string();
        for (DType target : {DType::float16, DType::bfloat16, DType::float32}) {
            SCOPED_TRACE(std::string(file) + " to " + std::string(torch_name(target)));
            LoadOptions options;
            options.dtype = target;
            options.compute_sha256 = true;
            auto cpu = Deserializer::open(path).value().load(options);
            ASSERT_TRUE(cpu) << cpu.error().message();
            options.device = "cuda";
            auto gpu = Deserializer::open(path).value().load(options);
            ASSERT_TRUE(gpu) << gpu.error().message();
            ASSERT_EQ(cpu->tensors.size(), gpu->tensors.size());
            std::uint64_t loaded_bytes = 0;
            std::uint64_t raw_bytes = 0;   // what waits in scratch for a conversion
            std::uint64_t raw_largest = 0; // at least this much scratch is held at once
            for (std::size_t i = 0; i < cpu->tensors.size(); ++i) {
                EXPECT_EQ(gpu->tensors[i].sha256_hex, cpu->tensors[i].sha256_hex) << "tensor " << i;
                loaded_bytes += gpu->tensors[i].info.byte_length;
            }
            for (const auto& info : Deserializer::open(path).value().index().tensors) {
                if (converts(info.dtype, target) && !info.is_meta) {
                    raw_bytes += info.data_length_bytes;
                    raw_largest = std::max(raw_largest, info.data_length_bytes);
                }
            }
            // The device memory it reports: the tensors' block, and no more scratch than all
            // converted tensors' raw bytes.
            EXPECT_GE(gpu->device_peak_bytes, loaded_bytes + raw_largest);
            EXPECT_LE(gpu->device_peak_bytes, loaded_bytes + raw_bytes + 64 * gpu->tensors.size());
            EXPECT_EQ(cpu->device_peak_bytes, 0U);
        }
    }
}

TEST(GpuLoad, CallerDestinationsAreFilledInPlace) {
    SKIP_WITHOUT_GPU();
    const auto path = (tensorizer_dir() / "large_mixed_v2.tensors").string();
    const auto manifest = testing::read_json(path + ".json");
    auto opened = Deserializer::open(path).value();
    std::vector<std::shared_ptr<std::byte>> mine;
    std::vector<std::byte*> given;
    LoadOptions options;
    options.device = "cuda:0";
    options.compute_sha256 = true;
    options.destination = [&](const TensorInfo& info) {
        mine.push_back(allocate_device_memory(0, info.byte_length).value());
        given.push_back(mine.back().get());
        return mine.back().get();
    };
    auto loaded = opened.load(options);
    ASSERT_TRUE(loaded) << loaded.error().message();
    EXPECT_EQ(loaded->device_memory, nullptr); // nothing of its own
    ASSERT_EQ(loaded->tensors.size(), given.size());
    for (std::size_t i = 0; i < given.size(); ++i) {
        EXPECT_EQ(loaded->tensors[i].bytes.data(), given[i]);
    }
    expect_manifest_hashes(*loaded, manifest);
}

TEST(GpuLoad, AModelOnTheGpuIsWrittenAndReadsBack) {
    SKIP_WITHOUT_GPU();
    for (const char* file : {"large_mixed_v2.tensors", "meta_v4.tensors", "nested_structure_v1.tensors"}) {
        SCOPED_TRACE(file);
        const auto path = (tensorizer_dir() / file).string();
        const auto manifest = testing::read_json(path + ".json");
        LoadOptions to_gpu;
        to_gpu.device = "cuda:0";
        auto model = Deserializer::open(path).value().load(to_gpu);
        ASSERT_TRUE(model) << model.error().message();
        const auto tensors = tensors_to_write(*model);
        for (bool encrypt : {false, true}) {
            const auto out = std::filesystem::temp_directory_path() / "ringload_gpu_written.tensors";
            WriteOptions write_options;
            OpenOptions read_options;
            if (encrypt) {
                auto key = EncryptionParams::random();
                write_options.encryption = key;
                read_options.decryption = DecryptionParams::from_key(key.key()).value();
            }
            auto written = write_tensorizer(out.string(), tensors, write_options);
            ASSERT_TRUE(written) << written.error().message();
            LoadOptions back;
            back.verify_hashes = true;
            back.compute_sha256 = true;
            auto reread = Deserializer::open(out.string(), read_options).value().load(back);
            ASSERT_TRUE(reread) << reread.error().message();
            expect_manifest_hashes(*reread, manifest);
            std::filesystem::remove(out);
        }
    }
}

// Failures with the default ring (every window of a small file issued at once) end the load
// with the error, never hang it, and the deserializer loads again afterwards.
TEST(GpuLoad, AWrongKeyOrATruncatedFileFailsTheLoadWithoutAHang) {
    SKIP_WITHOUT_GPU();
    const auto encrypted = tensorizer_dir() / "encrypted_key_v3.tensors";
    auto manifest = testing::read_json(encrypted.string() + ".json");
    auto key = testing::bytes_of_hex(manifest["encryption"]["key_hex"].get<std::string>());
    key[0] ^= std::byte{1};
    OpenOptions wrong;
    wrong.decryption = DecryptionParams::from_key(key).value();
    LoadOptions to_gpu;
    to_gpu.device = "cuda:0";
    to_gpu.verify_hashes = true;
    auto refused = Deserializer::open(encrypted.string(), wrong).value().load(to_gpu);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::decryption_failed) << refused.error().message();

    const auto original = tensorizer_dir() / "large_mixed_v2.tensors";
    const auto bytes = testing::read_file(original);
    const auto cut = testing::write_file(std::filesystem::temp_directory_path() / "ringload_gpu_cut.tensors", bytes);
    auto opened = Deserializer::open(cut.string()).value();
    std::filesystem::resize_file(cut, bytes.size() * 2 / 3); // after the index was read
    auto truncated = opened.load(to_gpu);
    ASSERT_FALSE(truncated);
    EXPECT_EQ(truncated.error().code, errc::truncated) << truncated.error().message();
    testing::write_file(cut, bytes);
    to_gpu.compute_sha256 = true;
    auto again = opened.load(to_gpu); // the link reports no stale failure
    std::filesystem::remove(cut);
    ASSERT_TRUE(again) << again.error().message();
    expect_manifest_hashes(*again, testing::read_json(original.string() + ".json"));
}

// The sha256 of each tensor by its path, as loaded.
std::map<std::string, std::string> hashes_by_name(const LoadedModel& model) {
    std::map<std::string, std::string> hashes;
    for (const auto& tensor : model.tensors) {
        hashes[tensor.info.display_name()] = tensor.sha256_hex;
    }
    return hashes;
}

TEST(GpuLoad, SafetensorsLoadsToTheDeviceAsOnTheCpuWithAndWithoutConversion) {
    SKIP_WITHOUT_GPU();
    testing::TempDir dir;
    const auto source = (tensorizer_dir() / "large_mixed_v2.tensors").string();
    auto model = Deserializer::open(source).value().load().value();
    const auto path = (dir.path() / "model.safetensors").string();
    ASSERT_TRUE(write_safetensors(path, tensors_to_write(model)));
    for (std::optional<DType> dtype : {std::optional<DType>{}, std::optional<DType>{DType::float16}}) {
        SCOPED_TRACE(dtype ? "to float16" : "as stored");
        LoadOptions options;
        options.dtype = dtype;
        options.compute_sha256 = true;
        auto cpu = Deserializer::open(path).value().load(options);
        ASSERT_TRUE(cpu) << cpu.error().message();
        options.device = "cuda:0";
        options.slot_count = 3;
        options.slot_size_bytes = 64 << 10;
        auto gpu = Deserializer::open(path).value().load(options);
        ASSERT_TRUE(gpu) << gpu.error().message();
        EXPECT_EQ(hashes_by_name(*gpu), hashes_by_name(*cpu));
    }
}

TEST(GpuLoad, TorchZipStoragesLoadToTheDeviceAsViews) {
    SKIP_WITHOUT_GPU();
    const auto torch_dir = testing::data_dir() / "torch";
    for (const char* file : {"plain_state_dict.pt", "module_state_dict.pt", "handmade_big_endian.pt"}) {
        SCOPED_TRACE(file);
        const auto path = (torch_dir / file).string();
        LoadOptions options;
        options.compute_sha256 = true;
        options.slot_count = 3;
        options.slot_size_bytes = 4096; // storages across slots: byte swapping in the slot per piece
        // Strided views on both sides (handmade_big_endian.pt holds a transposed one): a GPU load
        // makes no contiguous copies, as the refusal below says; the hashes are of the same spans.
        options.contiguous = false;
        auto cpu = Deserializer::open(path).value().load(options);
        ASSERT_TRUE(cpu) << cpu.error().message();
        options.device = "cuda:0";
        auto gpu = Deserializer::open(path).value().load(options);
        ASSERT_TRUE(gpu) << gpu.error().message();
        EXPECT_EQ(hashes_by_name(*gpu), hashes_by_name(*cpu));
    }
    // Views of one storage share device memory; a non-contiguous one is refused unless the
    // caller takes strided views.
    const auto views = (torch_dir / "shared_storage_views.pt").string();
    LoadOptions options;
    options.device = "cuda:0";
    auto refused = Deserializer::open(views).value().load(options);
    ASSERT_FALSE(refused);
    EXPECT_EQ(refused.error().code, errc::unsupported);
    options.contiguous = false;
    auto loaded = Deserializer::open(views).value().load(options);
    ASSERT_TRUE(loaded) << loaded.error().message();
    std::map<std::string, const LoadedTensor*> by_name;
    for (const auto& tensor : loaded->tensors) {
        by_name[tensor.info.display_name()] = &tensor;
    }
    EXPECT_EQ(by_name.at("base")->bytes.data(), by_name.at("alias_same_object")->bytes.data());
    EXPECT_EQ(by_name.at("slice")->bytes.data(), by_name.at("base")->bytes.data() + 4 * sizeof(float));
    EXPECT_EQ(by_name.at("transposed")->info.strides, (std::vector<std::uint64_t>{1, 6}));
}

// The streamed hand-over on a device (StreamedTensor from the link's completion thread, after the
// copies and conversions landed): every tensor once, as the model holds it, owned by the load's
// device block; the bytes are the CPU path's (compute_sha256 reads them back after the load).
TEST(GpuLoad, EveryTensorIsHandedOverOnceAsTheModelHoldsIt) {
    SKIP_WITHOUT_GPU();
    testing::TempDir dir;
    const auto tensorizer = (tensorizer_dir() / "large_mixed_v2.tensors").string();
    const auto safetensors = (dir.path() / "model.safetensors").string();
    ASSERT_TRUE(
        write_safetensors(safetensors, tensors_to_write(Deserializer::open(tensorizer).value().load().value())));
    const auto torch = (testing::data_dir() / "torch" / "module_state_dict.pt").string();
    for (const auto& path : {tensorizer, safetensors, torch}) {
        for (std::optional<DType> dtype : {std::optional<DType>{}, std::optional<DType>{DType::float16}}) {
            if (dtype && path == torch) {
                continue; // torch views on a GPU take no dtype (refused)
            }
            SCOPED_TRACE(path + (dtype ? ", to float16" : ""));
            std::vector<StreamedTensor> handed;
            std::mutex mutex;
            LoadOptions options;
            options.device = "cuda:0";
            options.dtype = dtype;
            options.verify_hashes = path == tensorizer;
            options.compute_sha256 = true;
            options.slot_count = 3;
            options.slot_size_bytes = 64 << 10;
            options.on_tensor = [&](const StreamedTensor& tensor) {
                std::lock_guard lock(mutex);
                handed.push_back(tensor);
            };
            auto gpu = Deserializer::open(path).value().load(options);
            ASSERT_TRUE(gpu) << gpu.error().message();
            ASSERT_EQ(handed.size(), gpu->tensors.size());
            std::vector<bool> seen(handed.size(), false);
            for (const auto& tensor : handed) {
                ASSERT_LT(tensor.position, seen.size());
                EXPECT_FALSE(seen[tensor.position]) << "handed over twice";
                seen[tensor.position] = true;
                const LoadedTensor& held = gpu->tensors[tensor.position];
                EXPECT_EQ(tensor.tensor.info.display_name(), held.info.display_name());
                EXPECT_EQ(tensor.tensor.bytes.data(), held.bytes.data());
                EXPECT_EQ(tensor.device, "cuda:0");
                EXPECT_EQ(tensor.owner.get(), gpu->device_memory.get());
            }
            options.device = "cpu";
            options.on_tensor = nullptr;
            auto cpu = Deserializer::open(path).value().load(options);
            ASSERT_TRUE(cpu) << cpu.error().message();
            EXPECT_EQ(hashes_by_name(*gpu), hashes_by_name(*cpu));
        }
    }
}

TEST(GpuLoad, ADeviceThatDoesNotExistIsRefusedByName) {
    SKIP_WITHOUT_GPU();
    LoadOptions options;
    options.device = "cuda:99";
    auto loaded = Deserializer::open((tensorizer_dir() / "basic_v1.tensors").string()).value().load(options);
    ASSERT_FALSE(loaded);
    EXPECT_NE(loaded.error().message().find("cuda:99"), std::string::npos) << loaded.error().message();
}

// Runs everywhere: without a usable GPU, a GPU load fails with a message that says why.
TEST(GpuLoad, WithoutAGpuTheLoadSaysWhy) {
    if (cuda_device_count()) {
        GTEST_SKIP() << "a GPU is present: the failure path needs a machine without one";
    }
    LoadOptions options;
    options.device = "cuda";
    auto loaded = Deserializer::open((tensorizer_dir() / "basic_v1.tensors").string()).value().load(options);
    ASSERT_FALSE(loaded);
    const std::string message = loaded.error().message();
    EXPECT_NE(message.find("cuda:0"), std::string::npos) << message;
    EXPECT_TRUE(message.find("no usable CUDA device") != std::string::npos ||
                message.find("built without CUDA") != std::string::npos)
        << message;
}

} // namespace
} // namespace ringload
