// tests/formats/tensorizer_fixtures_test.cpp
//
// Loads every fixture written by the real tensorizer 2.11.1 (tests/data/tensorizer, copied from
// the shared fixtures) through the public API and compares each tensor's serialized name,
// path, dtype, shape and the sha256 of its loaded bytes with the fixture's manifest. Runs
// every file with and without hash verification, with several ring geometries (tiny slots
// make headers straddle chunks), and with each read path.
#include "../support/decryption_support.hpp"
#include "../support/test_support.hpp"
#include "ringload/ringload.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

namespace ringload {
namespace {

using testing::tensorizer_dir;

nlohmann::json expected_path(const nlohmann::json& tensor) {
    return tensor["path"];
}

nlohmann::json actual_path(const TensorInfo& info) {
    nlohmann::json path = nlohmann::json::array();
    for (const auto& component : info.path) {
        if (const auto* key = std::get_if<std::string>(&component)) {
            path.push_back(*key);
        } else {
            path.push_back(std::get<std::uint64_t>(component));
        }
    }
    return path;
}

void expect_matches_manifest(const LoadedModel& model, const nlohmann::json& manifest) {
    const auto& expected = manifest["tensors"];
    ASSERT_EQ(model.tensors.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto& want = expected[i];
        const auto& got = model.tensors[i];
        SCOPED_TRACE("tensor " + std::to_string(i));
        EXPECT_EQ(testing::hex_of(got.info.name), want["serialized_name_hex"].get<std::string>());
        EXPECT_EQ(actual_path(got.info), expected_path(want));
        EXPECT_EQ("torch." + std::string(torch_name(got.info.dtype)), want["dtype"].get<std::string>());
        EXPECT_EQ(nlohmann::json(got.info.shape), want["shape"]);
        EXPECT_EQ(got.info.is_meta, want["is_meta"].get<bool>());
        EXPECT_EQ(got.bytes.size(), want["byte_length"].get<std::uint64_t>());
        EXPECT_EQ(got.sha256_hex, want["sha256"].get<std::string>());
    }
}

struct Geometry {
    std::uint32_t slot_count;
    std::size_t slot_size_bytes;
    ReadMode mode;
    const char* name;
};

// Encrypted fixtures: refused without a key, with the message the issue asks for.
void check_refused_without_key(const std::string& file) {
    auto opened = Deserializer::open((tensorizer_dir() / file).string());
    ASSERT_TRUE(opened) << opened.error().message(); // the index is readable without a key
    auto loaded = opened->load();
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.error().code, errc::encrypted_no_key);
    EXPECT_NE(loaded.error().message().find("encrypted: supply a key"), std::string::npos);
    EXPECT_NE(loaded.error().message().find(file), std::string::npos);
}

void check_fixture(const std::string& file) {
    const auto path = tensorizer_dir() / file;
    const auto manifest = testing::read_json(path.string() + ".json");
    const auto& encryption = manifest["encryption"];
    if (!encryption.is_null()) {
        check_refused_without_key(file);
    }
    const std::vector<Geometry> geometries = {
        {32, 4 << 20, ReadMode::automatic, "default"},
        {2, 8192, ReadMode::direct, "two 8 KiB slots, O_DIRECT"},
        {3, 4096, ReadMode::buffered, "three 4 KiB slots, buffered"},
    };
    for (const auto& geometry : geometries) {
        OpenOptions open_options;
        open_options.read_mode = geometry.mode;
        if (!encryption.is_null()) {
            open_options.decryption = testing::decryption_for(encryption, encryption["kind"]);
        }
        auto opened = Deserializer::open(path.string(), open_options);
        ASSERT_TRUE(opened) << opened.error().message();
        EXPECT_EQ(opened->index().data_version, manifest["data_version"].get<std::uint32_t>());
        EXPECT_EQ(opened->index().feature_flags, manifest["feature_flags"].get<std::uint64_t>());
        for (bool verify : {false, true}) {
            SCOPED_TRACE(std::string(geometry.name) + (verify ? ", verify" : ", no verify"));
            LoadOptions options;
            options.slot_count = geometry.slot_count;
            options.slot_size_bytes = geometry.slot_size_bytes;
            options.verify_hashes = verify;
            options.compute_sha256 = true;
            auto loaded = opened->load(options);
            ASSERT_TRUE(loaded) << loaded.error().message();
            expect_matches_manifest(*loaded, manifest);
        }
    }
}

// One test over every file of index.json, so that a new fixture is never silently left out.
TEST(TensorizerFixtures, EveryFixtureLoadsWithItsManifestsValues) {
    const auto files = testing::tensorizer_fixture_files();
    ASSERT_GE(files.size(), 15u);
    for (const auto& file : files) {
        SCOPED_TRACE(file);
        check_fixture(file);
    }
}

// Loads an opened large_mixed_v2 with verification and checks it against its manifest;
// returns how it was read ("O_DIRECT io_uring", "buffered pread", ...).
std::string load_and_check_large_mixed(Result<Deserializer>& opened) {
    if (!opened) {
        ADD_FAILURE() << opened.error().message();
        return {};
    }
    LoadOptions options;
    options.verify_hashes = true;
    options.compute_sha256 = true;
    auto loaded = opened->load(options);
    if (!loaded) {
        ADD_FAILURE() << loaded.error().message();
        return {};
    }
    expect_matches_manifest(*loaded, testing::read_json(tensorizer_dir() / "large_mixed_v2.tensors.json"));
    return loaded->how;
}

TEST(TensorizerFixtures, LoadThroughThePreadFallback) {
    ::setenv("RINGLOAD_DISABLE_IO_URING", "1", 1);
    auto opened = Deserializer::open((tensorizer_dir() / "large_mixed_v2.tensors").string());
    ::unsetenv("RINGLOAD_DISABLE_IO_URING");
    EXPECT_NE(load_and_check_large_mixed(opened).find("pread"), std::string::npos);
}

TEST(TensorizerFixtures, LoadFromTmpfs) {
    if (!std::filesystem::is_directory("/dev/shm")) {
        GTEST_SKIP() << "no /dev/shm on this host";
    }
    testing::TempDir dir("/dev/shm");
    auto copy = dir.path() / "large.tensors";
    std::filesystem::copy_file(tensorizer_dir() / "large_mixed_v2.tensors", copy);
    auto opened = Deserializer::open(copy.string(), {ReadMode::direct});
    load_and_check_large_mixed(opened);
}

TEST(TensorizerFixtures, FilterLoadsOnlyMatchingTensorsWithTheirValues) {
    auto manifest = testing::read_json(tensorizer_dir() / "large_mixed_v2.tensors.json");
    auto opened = Deserializer::open((tensorizer_dir() / "large_mixed_v2.tensors").string());
    ASSERT_TRUE(opened);
    LoadOptions options;
    options.verify_hashes = true;
    options.compute_sha256 = true;
    options.slot_size_bytes = 64 << 10;
    options.filter = [](const TensorInfo& info) { return info.dtype == DType::bfloat16; };
    auto loaded = opened->load(options);
    ASSERT_TRUE(loaded) << loaded.error().message();
    std::size_t expected_count = 0;
    for (const auto& want : manifest["tensors"]) {
        if (want["dtype"] != "torch.bfloat16") {
            continue;
        }
        ASSERT_LT(expected_count, loaded->tensors.size());
        const auto& got = loaded->tensors[expected_count++];
        EXPECT_EQ(got.info.name, want["name"].get<std::string>());
        EXPECT_EQ(got.sha256_hex, want["sha256"].get<std::string>());
    }
    EXPECT_GT(expected_count, 0u);
    EXPECT_EQ(loaded->tensors.size(), expected_count);
}

TEST(TensorizerFixtures, ReportsProgressUpToTheWholePlan) {
    auto opened = Deserializer::open((tensorizer_dir() / "large_mixed_v2.tensors").string());
    ASSERT_TRUE(opened);
    LoadOptions options;
    Progress last;
    options.progress = [&](const Progress& progress) { last = progress; };
    auto loaded = opened->load(options);
    ASSERT_TRUE(loaded);
    EXPECT_EQ(last.bytes_done, last.bytes_total);
    EXPECT_GE(last.bytes_total, loaded->bytes);
}

TEST(TensorizerFixtures, CancelledBeforeStartFailsWithCancelled) {
    auto opened = Deserializer::open((tensorizer_dir() / "large_mixed_v2.tensors").string());
    ASSERT_TRUE(opened);
    CancelToken cancel;
    cancel.cancel();
    LoadOptions options;
    options.cancel = &cancel;
    auto loaded = opened->load(options);
    ASSERT_FALSE(loaded);
    EXPECT_EQ(loaded.error().code, errc::cancelled);
}

// quirks/: files tensorizer writes but cannot read back; we read them per the format.
TEST(TensorizerQuirks, ReadPerTheFormat) {
    auto manifest = testing::read_json(tensorizer_dir() / "quirks" / "manifest.json");
    for (const auto& entry : manifest["cases"]) {
        const auto file = entry["file"].get<std::string>();
        SCOPED_TRACE(file);
        auto opened = Deserializer::open((tensorizer_dir() / "quirks" / file).string());
        ASSERT_TRUE(opened) << opened.error().message();
        LoadOptions options;
        options.compute_sha256 = true;
        auto loaded = opened->load(options);
        ASSERT_TRUE(loaded) << loaded.error().message();
        ASSERT_EQ(loaded->tensors.size(), entry["tensors"].size());
        for (std::size_t i = 0; i < loaded->tensors.size(); ++i) {
            const auto& want = entry["tensors"][i];
            EXPECT_EQ(loaded->tensors[i].bytes.size(), want["byte_length"].get<std::uint64_t>());
            if (want.contains("sha256_if_read_per_format")) {
                EXPECT_EQ(loaded->tensors[i].sha256_hex, want["sha256_if_read_per_format"].get<std::string>());
            }
        }
    }
}

} // namespace
} // namespace ringload
