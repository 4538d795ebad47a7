// tests/formats/tensorizer_serialize_test.cpp
//
// Our serializer against the bytes the real tensorizer wrote: for every fixture, each
// per-tensor header, the index and the file header are rebuilt from their parsed fields and
// must come out byte for byte as in the file; the data version and flags must be the ones
// tensorizer's minimal-version rule chose.
#include "../support/test_support.hpp"
#include "formats/tensorizer/dtype_string.hpp"
#include "formats/tensorizer/file_header.hpp"
#include "formats/tensorizer/serialize.hpp"
#include "formats/tensorizer/tensor_header.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace ringload::tensorizer {
namespace {

std::vector<std::byte> slice(const std::vector<std::byte>& bytes, std::uint64_t begin, std::uint64_t end) {
    return {bytes.begin() + static_cast<long>(begin), bytes.begin() + static_cast<long>(end)};
}

void check_file(const std::string& file) {
    const auto bytes = testing::read_file(testing::tensorizer_dir() / file);
    auto header = parse_file_header(std::span(bytes).first(file_header_bytes), bytes.size());
    ASSERT_TRUE(header) << header.error().message();
    auto index = parse_index(*header, std::span(bytes).subspan(file_header_bytes, header->index_bytes), bytes.size());
    ASSERT_TRUE(index) << index.error().message();

    std::vector<std::byte> entries;
    bool any_opaque = false;
    bool any_meta = false;
    std::uint64_t tensor_size = 0;
    for (const auto& tensor : index->tensors) {
        SCOPED_TRACE(tensor.display_name());
        auto raw = slice(bytes, tensor.record_offset_bytes, tensor.data_offset_bytes);
        auto parsed = parse_tensor_header(raw, header->has_crypt_info());
        ASSERT_TRUE(parsed) << parsed.error().message();
        auto dtype = parse_dtype_string(parsed->dtype_text);
        ASSERT_TRUE(dtype);
        RecordSpec spec;
        spec.name = parsed->name;
        spec.dtype = dtype->dtype;
        spec.shape = parsed->shape;
        spec.module_index = parsed->module_index;
        spec.tensor_type = parsed->tensor_type;
        spec.data_length = static_cast<std::uint64_t>(parsed->data_length);
        if (header->has_crypt_info()) {
            auto block =
                std::span<const std::byte>(raw).subspan(parsed->crypt_offset_bytes, parsed->crypt_length_bytes);
            auto crypt = parse_crypt_info(block, spec.data_length);
            ASSERT_TRUE(crypt) << crypt.error().message();
            spec.crypt = *crypt;
        }
        ASSERT_TRUE(check_record_spec(spec));
        StoredHashes hashes;
        for (const auto& stored : parsed->hashes) {
            if (stored.type == 0) {
                std::memcpy(&hashes.crc32, raw.data() + stored.value_offset_bytes, 4);
            } else {
                std::memcpy(hashes.sha256.data(), raw.data() + stored.value_offset_bytes, 32);
            }
        }
        EXPECT_EQ(serialize_tensor_header(spec, hashes), raw);
        EXPECT_EQ(tensor_header_size(spec), raw.size());
        EXPECT_EQ(hash_prefix_of(spec), hash_input_prefix(raw, *parsed));
        auto entry = serialize_index_entry(spec, tensor.record_offset_bytes);
        entries.insert(entries.end(), entry.begin(), entry.end());
        any_opaque = any_opaque || dtype->opaque;
        any_meta = any_meta || (spec.data_length == 0 && tensor.numel() > 0);
        tensor_size += spec.data_length;
    }
    auto index_region = slice(bytes, file_header_bytes, file_header_bytes + header->index_bytes);
    entries.resize(index_bytes_for(entries.size()));
    EXPECT_EQ(entries, index_region);

    FileSummary summary = choose_data_version(index->encrypted, any_opaque, any_meta);
    EXPECT_EQ(summary.data_version, header->data_version);
    EXPECT_EQ(summary.feature_flags, header->feature_flags);
    summary.tensor_size_bytes = tensor_size;
    summary.tensor_count = index->tensors.size();
    summary.index_bytes = header->index_bytes;
    EXPECT_EQ(serialize_file_header(summary), slice(bytes, 0, file_header_bytes));
}

TEST(TensorizerSerialize, RebuildsEveryFixturesHeadersIndexAndFileHeaderByteForByte) {
    const auto files = testing::tensorizer_fixture_files();
    ASSERT_GE(files.size(), 15u);
    for (const auto& file : files) {
        SCOPED_TRACE(file);
        check_file(file);
    }
}

TEST(TensorizerSerialize, RefusesWhatTheFormatCannotHold) {
    RecordSpec spec;
    spec.name = "w";
    EXPECT_TRUE(check_record_spec(spec));
    spec.shape = {1ull << 32};
    EXPECT_EQ(check_record_spec(spec).error().code, errc::invalid_argument);
    spec.shape = std::vector<std::uint64_t>(256, 1);
    EXPECT_EQ(check_record_spec(spec).error().code, errc::invalid_argument);
    spec.shape = {};
    spec.name = std::string(65536, 'x');
    EXPECT_EQ(check_record_spec(spec).error().code, errc::invalid_tensor_name);
    spec.name = "";
    EXPECT_EQ(check_record_spec(spec).error().code, errc::invalid_tensor_name);
}

TEST(TensorizerSerialize, IndexGrowsPastTensorizersReservationInWholePages) {
    EXPECT_EQ(index_bytes_for(100), 262144u);
    EXPECT_EQ(index_bytes_for(262144), 262144u);
    EXPECT_EQ(index_bytes_for(262145), 266240u);
}

} // namespace
} // namespace ringload::tensorizer
