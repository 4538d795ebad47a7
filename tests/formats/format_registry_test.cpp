// tests/formats/format_registry_test.cpp
//
// The format registry (formats/registry.hpp): each fixture's first bytes pick its format and
// read_any_index reads it through that format's reader; a legacy torch file is refused with its
// message and unknown bytes with the registry's; every registered format is complete and has a
// unique name, title and extensions; names and target extensions lead to the right description.
#include "../support/counting_source.hpp"
#include "../support/test_support.hpp"
#include "formats/registry.hpp"
#include "formats/safetensors/format.hpp"
#include "formats/tensorizer/format.hpp"
#include "formats/torch/format.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace ringload::formats {
namespace {

using MemorySource = testing::CountingSource; // a whole file in memory

std::vector<std::byte> bytes_of(std::string_view text) {
    std::vector<std::byte> bytes(text.size());
    std::memcpy(bytes.data(), text.data(), text.size());
    return bytes;
}

// One float32 tensor "a" of value 0, as safetensors lays it out.
std::vector<std::byte> small_safetensors() {
    const std::string header = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    std::vector<std::byte> bytes(8);
    for (std::size_t i = 0; i < 8; ++i) {
        bytes[i] = static_cast<std::byte>((header.size() >> (8 * i)) & 0xff);
    }
    const auto text = bytes_of(header);
    bytes.insert(bytes.end(), text.begin(), text.end());
    bytes.resize(bytes.size() + 4);
    return bytes;
}

// A file's first bytes, as many as detection looks at.
std::vector<std::byte> head_of(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars(detect_head_bytes);
    in.read(chars.data(), static_cast<std::streamsize>(chars.size()));
    std::vector<std::byte> bytes(static_cast<std::size_t>(in.gcount()));
    std::memcpy(bytes.data(), chars.data(), bytes.size());
    return bytes;
}

Detected detect_head(const std::filesystem::path& path) {
    return detect(head_of(path), std::filesystem::file_size(path));
}

Detected detect_bytes(const std::vector<std::byte>& bytes) {
    const auto head = std::span(bytes).first(std::min(bytes.size(), detect_head_bytes));
    return detect(head, bytes.size());
}

Result<Index> read_bytes(const std::string& name, std::vector<std::byte> bytes) {
    MemorySource source(name, std::move(bytes));
    boost::asio::io_context loop;
    return testing::run_to_completion(loop, read_any_index(source));
}

TEST(FormatRegistry, EveryFormatIsCompleteAndUnique) {
    std::set<std::string_view> names;
    std::set<std::string_view> titles;
    std::set<std::string_view> extensions;
    for (const Format* format : registered()) {
        ASSERT_NE(format, nullptr);
        SCOPED_TRACE(format->name);
        EXPECT_TRUE(names.insert(format->name).second) << "a second format named " << format->name;
        EXPECT_TRUE(titles.insert(format->title).second) << "a second format titled " << format->title;
        ASSERT_FALSE(format->extensions.empty()) << "a new file of it needs a name";
        for (std::string_view extension : format->extensions) {
            EXPECT_TRUE(extension.starts_with("."));
            EXPECT_TRUE(extensions.insert(extension).second) << "a second format takes " << extension;
        }
        ASSERT_NE(format->hooks, nullptr);
        EXPECT_NE(format->hooks->detect, nullptr);
        EXPECT_NE(format->hooks->read_index, nullptr);
        EXPECT_NE(format->hooks->describe, nullptr);
        EXPECT_NE(format->hooks->create_write_graph, nullptr);
        EXPECT_NE(format->hooks->build_load_graph, nullptr);
    }
    EXPECT_EQ(names.size(), 3u);
}

TEST(FormatRegistry, NamesLeadToTheirDescriptions) {
    EXPECT_EQ(named("tensorizer"), &tensorizer::format);
    EXPECT_EQ(named("safetensors"), &safetensors::format);
    EXPECT_EQ(named("torch"), &torch_zip::format);
    EXPECT_EQ(named("torch zip"), nullptr) << "a title is not a name";
    EXPECT_EQ(named("Tensorizer"), nullptr);
    EXPECT_EQ(named(""), nullptr);
    EXPECT_EQ(names_text(), "tensorizer, safetensors or torch");
    EXPECT_EQ(names_text(&Format::may_be_encrypted), "tensorizer");
    EXPECT_EQ(names_text(&Format::tensors_view_storages), "torch");
}

TEST(FormatRegistry, TargetsAreNamedByTheirExtension) {
    EXPECT_EQ(&for_target("/m/model.safetensors"), &safetensors::format);
    EXPECT_EQ(&for_target("/m/model.pt"), &torch_zip::format);
    EXPECT_EQ(&for_target("/m/model.pth"), &torch_zip::format);
    EXPECT_EQ(&for_target("file:///m/pytorch_model.bin"), &torch_zip::format);
    EXPECT_EQ(&for_target("/m/model.tensors"), &tensorizer::format);
    EXPECT_EQ(&for_target("s3://bucket/model"), &tensorizer::format) << "anything else is tensorizer";
    EXPECT_EQ(&for_target("/m/model.pt.tmp"), &tensorizer::format);
}

TEST(FormatRegistry, FixturesAreDetectedByTheirFirstBytes) {
    for (const auto& file : testing::tensorizer_fixture_files()) {
        const Detected detected = detect_head(testing::tensorizer_dir() / file);
        EXPECT_EQ(detected.format, &tensorizer::format) << file;
        EXPECT_EQ(detected.detection.verdict, Detection::Verdict::yes) << file;
    }
    for (const char* file : {"plain_state_dict.pt", "handmade_big_endian.pt", "shared_storage_views.pt"}) {
        const auto path = testing::data_dir() / "torch" / file;
        ASSERT_TRUE(std::filesystem::exists(path)) << path;
        const Detected detected = detect_head(path);
        EXPECT_EQ(detected.format, &torch_zip::format) << file;
        EXPECT_EQ(detected.detection.verdict, Detection::Verdict::yes) << file;
    }
    const Detected safetensors_file = detect_bytes(small_safetensors());
    EXPECT_EQ(safetensors_file.format, &safetensors::format);
}

TEST(FormatRegistry, ReadAnyIndexSaysWhichFormatReadIt) {
    const auto tiny = testing::tensorizer_dir() / "tiny_v1.tensors";
    auto tensorizer_index = read_bytes(tiny.string(), testing::read_file(tiny));
    ASSERT_TRUE(tensorizer_index) << tensorizer_index.error().message();
    EXPECT_EQ(tensorizer_index->format, &tensorizer::format);
    EXPECT_EQ(tensorizer_index->format_name(), "tensorizer");

    auto safetensors_index = read_bytes("small.safetensors", small_safetensors());
    ASSERT_TRUE(safetensors_index) << safetensors_index.error().message();
    EXPECT_EQ(safetensors_index->format, &safetensors::format);
    ASSERT_EQ(safetensors_index->tensors.size(), 1u);

    const auto plain = testing::data_dir() / "torch" / "plain_state_dict.pt";
    auto torch_index = read_bytes(plain.string(), testing::read_file(plain));
    ASSERT_TRUE(torch_index) << torch_index.error().message();
    EXPECT_EQ(torch_index->format, &torch_zip::format);
    EXPECT_TRUE(torch_index->format->tensors_view_storages);
}

TEST(FormatRegistry, LegacyTorchIsRefusedWithWhatToDo) {
    const auto legacy = testing::data_dir() / "torch" / "legacy_format.pt";
    const auto bytes = testing::read_file(legacy);
    const Detected detected = detect_bytes(bytes);
    EXPECT_EQ(detected.format, &torch_zip::format);
    ASSERT_EQ(detected.detection.verdict, Detection::Verdict::refused);

    auto index = read_bytes("legacy.pt", bytes);
    ASSERT_FALSE(index);
    EXPECT_EQ(index.error().code, errc::unsupported);
    EXPECT_EQ(index.error().detail,
              "legacy.pt: legacy torch format (pre-1.6, not a zip): re-save it with a newer "
              "torch (torch.save defaults to zip since 1.6)");
}

TEST(FormatRegistry, UnknownBytesAreRefusedWithTheChoices) {
    const auto bytes = bytes_of("GGUF\x03\0\0\0 not one of ours");
    EXPECT_EQ(detect_bytes(bytes).format, nullptr);
    auto index = read_bytes("model.gguf", bytes);
    ASSERT_FALSE(index);
    EXPECT_EQ(index.error().code, errc::not_tensorizer);
    EXPECT_EQ(index.error().detail,
              "model.gguf: not a tensorizer, safetensors or torch zip file (unrecognised first bytes)");
}

TEST(FormatRegistry, DescriptionsSayWhatInfoPrints) {
    Index index;
    index.format = &tensorizer::format;
    index.data_version = 3;
    index.encrypted = true;
    EXPECT_EQ(tensorizer::format.hooks->describe(index, DescriptionParts::text_and_json).text,
              "tensorizer, data version 3, feature flags: encrypted");
    EXPECT_EQ(tensorizer::format.hooks->describe(index, DescriptionParts::text_and_json).json, "{}");

    index.metadata = {{"format", "pt"}};
    EXPECT_EQ(safetensors::format.hooks->describe(index, DescriptionParts::text_and_json).text,
              "safetensors, 1 metadata entries");
    EXPECT_EQ(safetensors::format.hooks->describe(index, DescriptionParts::text_and_json).json,
              R"({"metadata":{"format":"pt"}})");

    index.storages = {{"0", DType::float16, 64, 8}};
    index.big_endian = true;
    EXPECT_EQ(torch_zip::format.hooks->describe(index, DescriptionParts::text_and_json).text,
              "torch zip, 1 storages, big-endian");
    EXPECT_EQ(torch_zip::format.hooks->describe(index, DescriptionParts::text_and_json).json,
              R"({"big_endian":true,"storages":[{"bytes":8,"data_offset":64,"dtype":"float16","key":"0"}]})");
    // `info` without --json asks for the text alone: the same line, no JSON built.
    const FormatDescription text_only = torch_zip::format.hooks->describe(index, DescriptionParts::text);
    EXPECT_EQ(text_only.text, "torch zip, 1 storages, big-endian");
    EXPECT_EQ(text_only.json, "");
}

} // namespace
} // namespace ringload::formats
