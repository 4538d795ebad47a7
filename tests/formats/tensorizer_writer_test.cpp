// tests/formats/tensorizer_writer_test.cpp
//
// The writer through the public API (write_tensorizer), read back by our reader and compared
// with the fixtures' manifests (independent: written by the real tensorizer). Every fixture
// loads, is re-written plain and encrypted, and loads again to the manifest's names, dtypes,
// shapes and sha256; the plain re-write of an unencrypted fixture is byte-identical to it,
// through every write path (io_uring or pwrite, unnamed or named temporary file, tiny slots that
// put headers across windows). Then what the writer refuses, and what a failed or cancelled
// write leaves behind: the previous file as it was, and nothing else.
#include "../support/decryption_support.hpp"
#include "../support/test_support.hpp"
#include "ringload/engine/hashes.hpp"
#include "ringload/ringload.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

namespace ringload {
namespace {

using testing::tensorizer_dir;

LoadedModel load(const std::filesystem::path& path, std::optional<DecryptionParams> decryption = std::nullopt) {
    OpenOptions open_options;
    open_options.decryption = std::move(decryption);
    auto opened = Deserializer::open(path.string(), std::move(open_options));
    EXPECT_TRUE(opened) << opened.error().message();
    LoadOptions options;
    options.verify_hashes = true;
    options.compute_sha256 = true;
    auto loaded = opened->load(options);
    EXPECT_TRUE(loaded) << loaded.error().message();
    return std::move(*loaded);
}

void expect_manifest(const LoadedModel& model, const nlohmann::json& manifest) {
    const auto& expected = manifest["tensors"];
    ASSERT_EQ(model.tensors.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        const auto& want = expected[i];
        const auto& got = model.tensors[i];
        SCOPED_TRACE(want["serialized_name_hex"].get<std::string>());
        EXPECT_EQ(testing::hex_of(got.info.name), want["serialized_name_hex"].get<std::string>());
        EXPECT_EQ("torch." + std::string(torch_name(got.info.dtype)), want["dtype"].get<std::string>());
        EXPECT_EQ(nlohmann::json(got.info.shape), want["shape"]);
        EXPECT_EQ(got.info.module_index, want["module_idx"].get<std::uint16_t>());
        EXPECT_EQ(got.info.tensor_type, want["tensor_type"].get<std::uint8_t>());
        EXPECT_EQ(got.sha256_hex, want["sha256"].get<std::string>());
    }
}

std::vector<std::string> directory_listing(const std::filesystem::path& dir) {
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

class ScopedEnvironment {
public:
    ScopedEnvironment(const char* name, const char* value) : name_(name) { ::setenv(name, value, 1); }
    ~ScopedEnvironment() { ::unsetenv(name_); }

private:
    const char* name_;
};

TEST(TensorizerWriter, EveryFixtureRoundTripsPlainAndEncrypted) {
    testing::TempDir tmp;
    const auto key = EncryptionParams::random();
    for (const auto& file : testing::tensorizer_fixture_files()) {
        SCOPED_TRACE(file);
        const auto manifest = testing::read_json((tensorizer_dir() / file).string() + ".json");
        const auto& encryption = manifest["encryption"];
        const auto decryption =
            testing::decryption_for(encryption, encryption.is_null() ? nlohmann::json() : encryption["kind"]);
        const LoadedModel original = load(tensorizer_dir() / file, decryption);
        const auto tensors = tensors_to_write(original);

        const auto plain = tmp.path() / ("plain_" + file);
        auto written = write_tensorizer(plain.string(), tensors);
        ASSERT_TRUE(written) << written.error().message();
        expect_manifest(load(plain), manifest);
        if (encryption.is_null()) {
            EXPECT_EQ(testing::read_file(plain), testing::read_file(tensorizer_dir() / file));
            EXPECT_EQ(written->data_version, manifest["data_version"].get<std::uint32_t>());
        }

        const auto sealed = tmp.path() / ("sealed_" + file);
        WriteOptions options;
        options.encryption = key;
        written = write_tensorizer(sealed.string(), tensors, options);
        ASSERT_TRUE(written) << written.error().message();
        expect_manifest(load(sealed, DecryptionParams::from_key(key.key()).value()), manifest);
    }
}

TEST(TensorizerWriter, EveryWritePathGivesTheSameBytes) {
    testing::TempDir tmp;
    const auto file = tensorizer_dir() / "large_mixed_v2.tensors";
    const LoadedModel original = load(file);
    const auto tensors = tensors_to_write(original);
    const auto expected = testing::read_file(file);

    struct Variant {
        const char* name;
        const char* environment; // switched on for this variant, or null
        std::uint32_t slot_count;
        std::size_t slot_size_bytes;
    };
    for (const Variant& variant :
         {Variant{"default", nullptr, 32, 4 << 20}, Variant{"two tiny slots", nullptr, 2, 8192},
          Variant{"pwrite", "RINGLOAD_DISABLE_IO_URING", 32, 4 << 20},
          Variant{"named temporary", "RINGLOAD_DISABLE_O_TMPFILE", 4, 1 << 20}}) {
        SCOPED_TRACE(variant.name);
        std::optional<ScopedEnvironment> environment;
        if (variant.environment != nullptr) {
            environment.emplace(variant.environment, "1");
        }
        WriteOptions options;
        options.slot_count = variant.slot_count;
        options.slot_size_bytes = variant.slot_size_bytes;
        const auto out = tmp.path() / "out.tensors";
        auto written = write_tensorizer(out.string(), tensors, options);
        ASSERT_TRUE(written) << written.error().message();
        EXPECT_EQ(testing::read_file(out), expected);
        EXPECT_EQ(directory_listing(tmp.path()), std::vector<std::string>{"out.tensors"});
    }
}

// What tensorizer 2.11.1 writes but cannot read back (quirks/), written so that it can.
TEST(TensorizerWriter, WritesTheQuirkCasesReadably) {
    testing::TempDir tmp;
    const std::vector<std::byte> f64_zero(8), bf16_zeros(12), word(4, std::byte{1});
    std::vector<TensorToWrite> tensors = {
        {{"meta.bf16"}, DType::bfloat16, {2, 3}, {}, true},
        {{"meta.0d"}, DType::float64, {}, {}, true},
        {{std::string("\x1e") + "flat"}, DType::int32, {1}, word},
    };
    const auto out = tmp.path() / "quirks.tensors";
    auto written = write_tensorizer(out.string(), tensors);
    ASSERT_TRUE(written) << written.error().message();
    EXPECT_EQ(written->data_version, 2u); // bf16; no meta tensor is left without data

    const LoadedModel model = load(out);
    ASSERT_EQ(model.tensors.size(), 3u);
    // An opaque meta tensor is stored as real zeros: tensorizer cannot size an opaque dtype
    // without data.
    EXPECT_FALSE(model.tensors[0].info.is_meta);
    EXPECT_EQ(model.tensors[0].info.data_length_bytes, 12u);
    EXPECT_TRUE(std::equal(model.tensors[0].bytes.begin(), model.tensors[0].bytes.end(), bf16_zeros.begin()));
    // So is a 0-d meta tensor: tensorizer sizes it as a float (numpy.prod(()) == 1.0).
    EXPECT_FALSE(model.tensors[1].info.is_meta);
    EXPECT_EQ(model.tensors[1].info.data_length_bytes, 8u);
    EXPECT_TRUE(std::equal(model.tensors[1].bytes.begin(), model.tensors[1].bytes.end(), f64_zero.begin()));
    // A flat key starting with U+001E comes back as that key, not as a path.
    ASSERT_EQ(model.tensors[2].info.path.size(), 1u);
    EXPECT_EQ(std::get<std::string>(model.tensors[2].info.path[0]), std::string("\x1e") + "flat");
}

TEST(TensorizerWriter, EncryptsTensorsWithoutDataAsTensorizerDoesMetaTensors) {
    testing::TempDir tmp;
    const std::vector<std::byte> word(4, std::byte{9});
    std::vector<TensorToWrite> tensors = {
        {{"empty"}, DType::float32, {0, 3}, {}},
        {{"ghost"}, DType::float32, {2}, {}, true},
        {{"real"}, DType::float32, {1}, word},
    };
    WriteOptions options;
    options.encryption = EncryptionParams::random();
    const auto out = tmp.path() / "sealed.tensors";
    auto written = write_tensorizer(out.string(), tensors, options);
    ASSERT_TRUE(written) << written.error().message();
    EXPECT_EQ(written->data_version, 4u);
    const LoadedModel model = load(out, DecryptionParams::from_key(options.encryption->key()).value());
    ASSERT_EQ(model.tensors.size(), 3u);
    EXPECT_EQ(model.tensors[0].bytes.size(), 0u);
    EXPECT_EQ(model.tensors[1].bytes.size(), 8u);
    EXPECT_EQ(model.tensors[2].sha256_hex, to_hex(sha256(word)));
}

void expect_refused(std::vector<TensorToWrite> tensors, errc code, const std::string& words) {
    testing::TempDir tmp;
    const auto out = tmp.path() / "refused.tensors";
    auto written = write_tensorizer(out.string(), tensors);
    ASSERT_FALSE(written);
    EXPECT_EQ(written.error().code, code) << written.error().message();
    EXPECT_NE(written.error().message().find(words), std::string::npos) << written.error().message();
    EXPECT_NE(written.error().message().find(out.string()), std::string::npos) << written.error().message();
    EXPECT_TRUE(directory_listing(tmp.path()).empty());
}

TEST(TensorizerWriter, RefusesWhatNoReaderCouldLoadCorrectly) {
    const std::vector<std::byte> word(4);
    expect_refused({{{"empty.bf16"}, DType::bfloat16, {0, 3}, {}}}, errc::unsupported, "zero-element bfloat16");
    expect_refused({{{"short"}, DType::float32, {2}, word}}, errc::invalid_argument, "4 bytes given");
    expect_refused({{{"same"}, DType::float32, {1}, word}, {{"same"}, DType::float32, {1}, word}},
                   errc::invalid_tensor_name, "same");
    expect_refused({{{""}, DType::float32, {1}, word}}, errc::invalid_tensor_name, "empty tensor name");
    expect_refused({}, errc::invalid_argument, "no tensors");
    TensorToWrite nested{{"layers", std::uint64_t{0}}, DType::float32, {1}, word};
    nested.tensor_type = 0;
    expect_refused({nested}, errc::invalid_argument, "needs tensor type 2");
}

TEST(TensorizerWriter, HoldsMoreTensorsThanTensorizersFixedIndex) {
    testing::TempDir tmp;
    const std::vector<std::byte> word(4, std::byte{3});
    std::vector<TensorToWrite> tensors;
    for (int i = 0; i < 5000; ++i) {
        tensors.push_back({{"model.layers." + std::to_string(i) + ".scale"}, DType::float32, {1}, word});
    }
    const auto out = tmp.path() / "many.tensors";
    auto written = write_tensorizer(out.string(), tensors);
    ASSERT_TRUE(written) << written.error().message();
    auto opened = Deserializer::open(out.string());
    ASSERT_TRUE(opened) << opened.error().message();
    EXPECT_EQ(opened->index().tensors.size(), 5000u);
    EXPECT_GT(opened->index().tensors.front().record_offset_bytes, 73u + (256u << 10));
    LoadOptions options;
    options.verify_hashes = true;
    auto loaded = opened->load(options);
    ASSERT_TRUE(loaded) << loaded.error().message();
}

TEST(TensorizerWriter, ACancelledWriteLeavesThePreviousFileAndNothingElse) {
    testing::TempDir tmp;
    const auto out = tmp.path() / "model.tensors";
    const std::vector<std::byte> previous = {std::byte{'o'}, std::byte{'l'}, std::byte{'d'}};
    testing::write_file(out, previous);
    std::vector<std::byte> big(64 << 20, std::byte{5});
    std::vector<TensorToWrite> tensors = {{{"big"}, DType::uint8, {big.size()}, big}};
    for (const char* environment : {"RINGLOAD_UNSET_FOR_THIS_RUN", "RINGLOAD_DISABLE_O_TMPFILE"}) {
        SCOPED_TRACE(environment);
        ScopedEnvironment scoped(environment, "1");
        CancelToken cancel;
        WriteOptions options;
        options.slot_count = 2;
        options.slot_size_bytes = 1 << 20;
        options.cancel = &cancel;
        options.progress = [&cancel](const Progress&) { cancel.cancel(); };
        auto written = write_tensorizer(out.string(), tensors, options);
        ASSERT_FALSE(written);
        EXPECT_EQ(written.error().code, errc::cancelled);
        EXPECT_EQ(testing::read_file(out), previous);
        EXPECT_EQ(directory_listing(tmp.path()), std::vector<std::string>{"model.tensors"});
    }
}

TEST(TensorizerWriter, NamesTheTargetWhenItsDirectoryIsMissing) {
    testing::TempDir tmp;
    const std::vector<std::byte> word(4);
    const auto out = tmp.path() / "missing" / "model.tensors";
    auto written = write_tensorizer(out.string(), std::vector<TensorToWrite>{{{"w"}, DType::float32, {1}, word}});
    ASSERT_FALSE(written);
    EXPECT_EQ(written.error().code, errc::not_found);
    EXPECT_NE(written.error().message().find((tmp.path() / "missing").string()), std::string::npos);
}

} // namespace
} // namespace ringload
