// formats/registry.hpp
//
// Every format ringload reads and writes, in one list (registry.cpp: one line per format, in
// detection order), and what the rest of the library asks of it: which format a source holds
// (from its first bytes, never from its name), which one a name or a target's extension means.
//
//     RL_CO_TRY(index, co_await formats::read_any_index(source)); // index.format says which
//     const Format* to = formats::named("safetensors");        // null: no such format
//
// A new format is a folder under formats/ with its description (format.hpp / format.cpp,
// formats/format_hooks.hpp) and one line in registry.cpp.
#pragma once

#include "formats/format_hooks.hpp"

#include <span>
#include <string>
#include <string_view>

namespace ringload::formats {

// In detection order: a format is asked about a file only when none before it took it.
std::span<const Format* const> registered() noexcept;

// The format called `name` ("tensorizer", "safetensors", "torch"), or null.
const Format* named(std::string_view name) noexcept;

// The format whose extension ends `target` (".safetensors"; ".pt", ".pth", ".bin"), else the
// first registered one (tensorizer, which takes any name).
const Format& for_target(std::string_view target) noexcept;

// "tensorizer, safetensors or torch": the names, for messages that list the choices; with a
// property, of the formats that have it (&Format::may_be_encrypted: "tensorizer").
std::string names_text(bool Format::*property = nullptr);

// What the first format to recognise `head` makes of it; `no` when none does.
struct Detected {
    const Format* format = nullptr; // null: no format recognised the bytes
    Detection detection;
};
Detected detect(std::span<const std::byte> head, std::uint64_t size_bytes);

// Reads the source's first bytes, and its index through the format they show. A file no format
// recognises is refused; when the caller meant a format (`expected`, else the extension of the
// source's name), with what that format finds wrong in it (FormatHooks::why_not).
Task<Result<Index>> read_any_index(Source& source, const Format* expected = nullptr);

} // namespace ringload::formats
