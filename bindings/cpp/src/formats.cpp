// bindings/cpp/src/formats.cpp
#include "ringload/formats.hpp"

#include "formats/registry.hpp"

namespace ringload {

std::span<const Format* const> registered_formats() noexcept {
    return formats::registered();
}

const Format* format_named(std::string_view name) noexcept {
    return formats::named(name);
}

std::string format_names_text(bool Format::*property) {
    return formats::names_text(property);
}

FormatDescription describe_format(const Index& index, DescriptionParts parts) {
    if (index.format == nullptr) {
        return {"unknown", "{}"}; // an Index built by hand
    }
    return index.format->hooks->describe(index, parts);
}

} // namespace ringload
