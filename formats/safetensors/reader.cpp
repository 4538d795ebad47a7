// formats/safetensors/reader.cpp
#include "formats/safetensors/reader.hpp"

#include "formats/safetensors/header.hpp"

#include <array>
#include <vector>

namespace ringload::safetensors {

bool has_safetensors_shape(std::span<const std::byte> first_bytes, std::uint64_t file_size) noexcept {
    if (first_bytes.size() <= length_field_bytes) {
        return false;
    }
    const auto length = parse_header_length(first_bytes, file_size);
    return length && *length > 0 && first_bytes[length_field_bytes] == std::byte{'{'};
}

Task<Result<Index>> read_index(Source& source) {
    const std::uint64_t file_size = source.size_bytes();
    std::array<std::byte, length_field_bytes> length_bytes{};
    if (file_size < length_bytes.size()) {
        co_return fail(errc::truncated, source.name() + ": safetensors: the file ends inside the 8-byte header length");
    }
    auto length_read = co_await read_exactly_at(source, 0, length_bytes);
    if (!length_read) {
        co_return with_context(length_read.error(), source.name());
    }
    auto length = parse_header_length(length_bytes, file_size);
    if (!length) {
        co_return with_context(length.error(), source.name());
    }
    std::vector<std::byte> header(*length);
    auto header_read = co_await read_exactly_at(source, length_field_bytes, header);
    if (!header_read) {
        co_return with_context(header_read.error(), source.name());
    }
    auto index = parse_header(header, file_size);
    if (!index) {
        co_return with_context(index.error(), source.name());
    }
    co_return std::move(*index);
}

} // namespace ringload::safetensors
