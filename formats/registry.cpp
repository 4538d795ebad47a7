// formats/registry.cpp
#include "formats/registry.hpp"

#include "formats/safetensors/format.hpp"
#include "formats/tensorizer/format.hpp"
#include "formats/torch/format.hpp"

#include <algorithm>
#include <array>
#include <vector>

namespace ringload::formats {
namespace {

// Detection order, one line per format. tensorizer first: it also takes targets with no known
// extension (for_target). safetensors before torch: a header length of 0x0280 begins 80 02, as
// a protocol-2 pickle (a legacy torch file) does; a legacy file's byte 8 (inside its magic
// number) is never '{'.
constexpr std::array<const Format*, 3> detection_order{
    &tensorizer::format,
    &safetensors::format,
    &torch_zip::format,
};

// "a, b or c" of one text member of the formats that have `property` (all: null).
std::string joined(std::string_view Format::*member, bool Format::*property = nullptr) {
    std::vector<std::string_view> parts;
    for (const Format* format : detection_order) {
        if (property == nullptr || format->*property) {
            parts.push_back(format->*member);
        }
    }
    std::string text;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        text += i == 0 ? "" : i + 1 == parts.size() ? " or " : ", ";
        text += parts[i];
    }
    return text;
}

} // namespace

std::span<const Format* const> registered() noexcept {
    return detection_order;
}

const Format* named(std::string_view name) noexcept {
    auto found =
        std::find_if(detection_order.begin(), detection_order.end(), [&](const Format* f) { return f->name == name; });
    return found != detection_order.end() ? *found : nullptr;
}

const Format& for_target(std::string_view target) noexcept {
    for (const Format* format : detection_order) {
        for (std::string_view extension : format->extensions) {
            if (target.ends_with(extension)) {
                return *format;
            }
        }
    }
    return *detection_order.front();
}

std::string names_text(bool Format::*property) {
    return joined(&Format::name, property);
}

Detected detect(std::span<const std::byte> head, std::uint64_t size_bytes) {
    for (const Format* format : detection_order) {
        Detection detection = format->hooks->detect(head, size_bytes);
        if (detection.verdict != Detection::Verdict::no) {
            return {format, std::move(detection)};
        }
    }
    return {};
}

namespace {

// The format whose extension ends `name` exactly, or null (no fallback: for_target's is for
// writers, which must choose one).
const Format* format_by_extension(std::string_view name) {
    for (const Format* format : detection_order) {
        for (std::string_view extension : format->extensions) {
            if (name.ends_with(extension)) {
                return format;
            }
        }
    }
    return nullptr;
}

Error unrecognised(const Source& source, std::span<const std::byte> head, const Format* expected) {
    const Format* meant = expected != nullptr ? expected : format_by_extension(source.name());
    if (meant != nullptr && meant->hooks->why_not != nullptr) {
        const std::string why = meant->hooks->why_not(head, source.size_bytes());
        if (!why.empty()) {
            return fail(errc::not_tensorizer,
                        source.name() + ": not a valid " + std::string(meant->title) + " file: " + why);
        }
    }
    return fail(errc::not_tensorizer,
                source.name() + ": not a " + joined(&Format::title) + " file (unrecognised first bytes)");
}

} // namespace

Task<Result<Index>> read_any_index(Source& source, const Format* expected) {
    std::array<std::byte, detect_head_bytes> head{};
    const auto head_bytes = static_cast<std::size_t>(std::min<std::uint64_t>(source.size_bytes(), head.size()));
    auto head_span = std::span<std::byte>(head).first(head_bytes);
    auto head_read = co_await read_exactly_at(source, 0, head_span);
    if (!head_read) {
        co_return with_context(head_read.error(), source.name());
    }
    Detected detected = detect(head_span, source.size_bytes());
    if (detected.format == nullptr) {
        co_return unrecognised(source, head_span, expected);
    }
    if (detected.detection.verdict == Detection::Verdict::refused) {
        co_return with_context(std::move(detected.detection.refusal), source.name());
    }
    auto reading = detected.format->hooks->read_index(source);
    co_return co_await std::move(reading);
}

} // namespace ringload::formats
