// formats/tensorizer/reader.cpp
#include "formats/tensorizer/reader.hpp"

#include "formats/tensorizer/file_header.hpp"
#include "formats/tensorizer/key_resolver.hpp"
#include "formats/tensorizer/tensor_header.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace ringload::tensorizer {

bool has_tensorizer_magic(std::span<const std::byte> first_bytes) noexcept {
    const std::size_t compared = std::min<std::size_t>(first_bytes.size(), 5);
    return compared == 0 || std::memcmp(first_bytes.data(), "|TZR|", compared) == 0;
}

Task<Result<Index>> read_index(Source& source) {
    const std::uint64_t file_size = source.size_bytes();
    std::array<std::byte, file_header_bytes> head{};
    const auto head_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(file_size, head.size()));
    auto head_span = std::span<std::byte>(head).first(head_bytes);
    auto head_read = co_await read_exactly_at(source, 0, head_span);
    if (!head_read) {
        co_return with_context(head_read.error(), source.name());
    }
    auto header = parse_file_header(head_span, file_size);
    if (!header) {
        co_return with_context(header.error(), source.name());
    }
    std::vector<std::byte> index_bytes(header->index_bytes);
    auto index_read = co_await read_exactly_at(source, file_header_bytes, index_bytes);
    if (!index_read) {
        co_return with_context(index_read.error(), source.name());
    }
    auto index = parse_index(*header, index_bytes, file_size);
    if (!index) {
        co_return with_context(index.error(), source.name());
    }
    co_return std::move(*index);
}

namespace {

Error tensor_context(Error error, const Source& source, const TensorInfo& tensor) {
    return with_context(std::move(error), source.name() + ": tensor '" + tensor.display_name() + "'");
}

} // namespace

Task<Result<void>> prepare_keys(Source& source, const Index& index, KeyResolver& keys) {
    if (index.data_version < 3) {
        co_return fail(errc::not_encrypted_key_given,
                       source.name() + ": a key or passphrase was given but the file is not encrypted (data version " +
                           std::to_string(index.data_version) + " predates encryption)");
    }
    if (!index.encrypted) {
        co_return fail(errc::not_encrypted_key_given,
                       source.name() +
                           ": a key or passphrase was given but the file is not flagged as encrypted "
                           "(data version " +
                           std::to_string(index.data_version) + ", feature flags " +
                           std::to_string(index.feature_flags) + ")");
    }
    // The first tensor with data carries the key-derivation parameters every tensor repeats.
    for (const auto& tensor : index.tensors) {
        if (tensor.data_length_bytes == 0) {
            continue;
        }
        std::vector<std::byte> header_bytes(tensor.data_offset_bytes - tensor.record_offset_bytes);
        auto read = co_await read_exactly_at(source, tensor.record_offset_bytes, header_bytes);
        if (!read) {
            co_return tensor_context(read.error(), source, tensor);
        }
        auto header = parse_tensor_header(header_bytes, true);
        if (!header) {
            co_return tensor_context(header.error(), source, tensor);
        }
        auto crypt = crypt_info_to_decrypt(header_bytes, *header, tensor.data_length_bytes);
        if (!crypt) {
            co_return tensor_context(crypt.error(), source, tensor);
        }
        auto key = keys.key_for(*crypt);
        if (!key) {
            co_return tensor_context(key.error(), source, tensor);
        }
        break;
    }
    co_return Result<void>{};
}

} // namespace ringload::tensorizer
