// tests/formats/tensorizer_bad_files_test.cpp
//
// Every file in tests/data/tensorizer/bad/ must fail with the error category its manifest
// names, with a message that names the file and the tensor or offset: never a crash, a hang
// or a silent success. Cases that need a key are opened with the key or passphrase their
// manifest names.
#include "../support/decryption_support.hpp"
#include "../support/test_support.hpp"
#include "ringload/ringload.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <regex>

namespace ringload {
namespace {

using testing::tensorizer_dir;

std::vector<nlohmann::json> bad_cases() {
    std::vector<nlohmann::json> cases;
    const auto manifest = testing::read_json(tensorizer_dir() / "bad" / "manifest.json");
    for (const auto& entry : manifest["cases"]) {
        cases.push_back(entry);
    }
    return cases;
}

void check_bad_file(const nlohmann::json& bad) {
    const auto file = bad["file"].get<std::string>();
    const auto path = (tensorizer_dir() / "bad" / file).string();
    const auto category = bad["expected_error_category"].get<std::string>();

    // The error may come at open (header, index) or at load (records, hashes): with
    // verification, since flipped bytes are only detectable through the hashes.
    // Every read path and a ring small enough that headers straddle slots.
    struct Way {
        ReadMode mode;
        std::size_t slot_size_bytes;
    };
    std::optional<Error> error;
    for (auto way : {Way{ReadMode::automatic, 4 << 20}, Way{ReadMode::direct, 8192}, Way{ReadMode::buffered, 4096}}) {
        OpenOptions open_options;
        open_options.read_mode = way.mode;
        open_options.decryption = testing::decryption_for(bad["open_with"], bad["open_with"]["decryption"]);
        auto opened = Deserializer::open(path, open_options);
        if (!opened) {
            error = opened.error();
            break;
        }
        LoadOptions options;
        options.verify_hashes = true;
        options.slot_size_bytes = way.slot_size_bytes;
        auto loaded = opened->load(options);
        ASSERT_FALSE(loaded) << file << " loaded without an error";
        EXPECT_EQ(errc_name(loaded.error().code), category) << loaded.error().message();
        error = loaded.error();
    }
    ASSERT_TRUE(error);
    EXPECT_EQ(errc_name(error->code), category) << error->message();
    const std::string message = error->message();
    EXPECT_NE(message.find(file), std::string::npos) << "message does not name the file: " << message;
    std::regex where("tensor '|offset|byte|bytes|magic|version|count|name");
    EXPECT_TRUE(std::regex_search(message, where)) << "message does not say where: " << message;
}

// Truncated data is an error even without verification (tensorizer itself misses it).
TEST(BadTensorizerFiles, TruncatedDataFailsWithoutVerification) {
    auto opened = Deserializer::open((tensorizer_dir() / "bad" / "trunc_in_tensor_data.tensors").string());
    if (opened) {
        auto loaded = opened->load();
        ASSERT_FALSE(loaded);
        EXPECT_EQ(loaded.error().code, errc::truncated);
    } else {
        EXPECT_EQ(opened.error().code, errc::truncated);
    }
}

TEST(BadTensorizerFiles, EveryCaseFailsWithItsCategoryAndSaysWhere) {
    std::size_t checked = 0;
    std::size_t with_key = 0;
    for (const auto& bad : bad_cases()) {
        SCOPED_TRACE(bad["file"].get<std::string>());
        check_bad_file(bad);
        ++checked;
        with_key += bad["open_with"]["decryption"].is_null() ? 0 : 1;
    }
    EXPECT_EQ(checked, 18u);
    EXPECT_GE(with_key, 5u); // wrong key, wrong passphrase, flipped ciphertext, flipped MAC, key on a plain file
}

TEST(BadTensorizerFiles, MissingFileIsNotFoundAndNamed) {
    auto opened = Deserializer::open("/nonexistent/model.tensors");
    ASSERT_FALSE(opened);
    EXPECT_EQ(opened.error().code, errc::not_found);
    EXPECT_NE(opened.error().message().find("/nonexistent/model.tensors"), std::string::npos);
}

TEST(BadTensorizerFiles, EmptyAndTinyFiles) {
    testing::TempDir dir;
    auto empty = testing::write_file(dir.path() / "empty.tensors", {});
    auto opened = Deserializer::open(empty.string());
    ASSERT_FALSE(opened);
    EXPECT_EQ(opened.error().code, errc::truncated);
    auto junk = testing::write_file(dir.path() / "junk.bin", std::vector<std::byte>(100, std::byte{0x41}));
    opened = Deserializer::open(junk.string());
    ASSERT_FALSE(opened);
    EXPECT_EQ(opened.error().code, errc::not_tensorizer);
}

// Every single-byte truncation point of a small file fails cleanly (no crash, no success).
TEST(BadTensorizerFiles, EveryTruncationOfTheHeadersFails) {
    auto bytes = testing::read_file(tensorizer_dir() / "tiny_v1.tensors");
    testing::TempDir dir;
    auto path = dir.path() / "cut.tensors";
    // The interesting places: the file header, the index start, and the tensor records.
    std::vector<std::size_t> cuts;
    for (std::size_t n = 0; n < 200; ++n) {
        cuts.push_back(n);
    }
    for (std::size_t n = 262'217; n < bytes.size() - 8; ++n) { // records, without the sentinel
        cuts.push_back(n);
    }
    for (std::size_t n : cuts) {
        testing::write_file(path, std::vector<std::byte>(bytes.begin(), bytes.begin() + static_cast<long>(n)));
        auto opened = Deserializer::open(path.string());
        if (!opened) {
            continue;
        }
        auto loaded = opened->load();
        ASSERT_FALSE(loaded) << "a file cut at " << n << " bytes loaded";
        EXPECT_EQ(loaded.error().code, errc::truncated) << loaded.error().message();
    }
}

} // namespace
} // namespace ringload
