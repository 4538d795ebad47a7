// formats/tensorizer/reader.cpp
#include "formats/tensorizer/reader.hpp"

#include "formats/tensorizer/file_header.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

namespace ringload::tensorizer {

bool has_tensorizer_magic(std::span<const std::byte> first_bytes) noexcept {
    return first_bytes.size() >= 5 && std::memcmp(first_bytes.data(), "|TZR|", 5) == 0;
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

} // namespace ringload::tensorizer
