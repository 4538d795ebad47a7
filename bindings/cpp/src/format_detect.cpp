// bindings/cpp/src/format_detect.cpp
#include "format_detect.hpp"

#include "formats/safetensors/reader.hpp"
#include "formats/tensorizer/reader.hpp"
#include "formats/torch/reader.hpp"

#include <algorithm>
#include <array>

namespace ringload {

Task<Result<Index>> read_any_index(Source& source) {
    std::array<std::byte, 16> head{};
    const auto head_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(source.size_bytes(), head.size()));
    auto head_span = std::span<std::byte>(head).first(head_bytes);
    auto head_read = co_await read_exactly_at(source, 0, head_span);
    if (!head_read) {
        co_return with_context(head_read.error(), source.name());
    }
    if (tensorizer::has_tensorizer_magic(head_span)) {
        auto reading = tensorizer::read_index(source);
        co_return co_await std::move(reading);
    }
    // safetensors before the legacy torch check: a header length of 0x0280 begins 80 02, as a
    // protocol-2 pickle does; a legacy file's byte 8 (inside its magic number) is never '{'.
    if (safetensors::has_safetensors_shape(head_span, source.size_bytes())) {
        auto reading = safetensors::read_index(source);
        co_return co_await std::move(reading);
    }
    if (torch_zip::has_torch_zip_magic(head_span) || torch_zip::has_legacy_torch_magic(head_span)) {
        auto reading = torch_zip::read_index(source); // a legacy file gets its own message there
        co_return co_await std::move(reading);
    }
    co_return fail(errc::not_tensorizer, source.name() +
                                             ": not a tensorizer, safetensors or torch zip file (unrecognised first "
                                             "bytes)");
}

} // namespace ringload
