// bindings/cpp/include/ringload/formats.hpp
//
// The file formats ringload reads and writes, as registered descriptions (ringload/format.hpp):
// what `Index::format` points at, and what a caller picks a target format from.
//
//     const ringload::Format* to = ringload::format_named("safetensors"); // null: unknown
//     for (const ringload::Format* format : ringload::registered_formats()) { list(format->name); }
//     ringload::FormatDescription about = ringload::describe_format(opened->index());
#pragma once

#include "ringload/format.hpp"
#include "ringload/tensor_info.hpp"

#include <span>
#include <string>
#include <string_view>

namespace ringload {

// tensorizer, safetensors, torch: in the order a file's first bytes are tried against them.
std::span<const Format* const> registered_formats() noexcept;

// The format called `name` ("tensorizer", "safetensors", "torch"), or null.
const Format* format_named(std::string_view name) noexcept;

// "tensorizer, safetensors or torch", for messages that list the choices; with a property, of
// the formats that have it (&Format::may_be_encrypted: "tensorizer").
std::string format_names_text(bool Format::*property = nullptr);

// What `ringload info` says of the file's format: its first line and its `--json` extras
// (tensorizer: data version and flags; safetensors: __metadata__; torch: storages, byte order).
// With DescriptionParts::text the json is left empty.
FormatDescription describe_format(const Index& index, DescriptionParts parts = DescriptionParts::text_and_json);

} // namespace ringload
