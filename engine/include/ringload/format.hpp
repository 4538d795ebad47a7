// engine/include/ringload/format.hpp
//
// A file format as the rest of ringload sees it: its name, the file names it goes by, and what
// its files can hold. Each format registers one description (formats/<name>/format.cpp; the
// registry, formats/registry.cpp, lists them in detection order), and an Index points at the
// description of the format that read it. Callers ask the description, never compare names:
//
//     if (!index.format->stores_hashes) { ... }   // not: index.format != "tensorizer"
//     std::printf("%s\n", index.format_name().data());
//
// What detects, reads, describes and writes the format hangs off `hooks`, which only the
// library sees (formats/format_hooks.hpp). Descriptions are constants: a `const Format*` stays
// valid for the whole program and two of them are the same format exactly when they are equal.
// Standard types only: this header is part of the installed API.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace ringload {

struct FormatHooks;

// What `ringload info` shows of a file's format besides its tensors.
struct FormatDescription {
    std::string text = {}; // the first line after "format: " ("tensorizer, data version 3, ...")
    std::string json = {}; // members `info --json` adds, as one JSON object's text ("{}": none)
};

// Which parts of a FormatDescription to fill: `info` without --json needs the text alone (the
// JSON of a million torch storages cost a tenth of `info`).
enum class DescriptionParts { text, text_and_json };

struct Format {
    // "tensorizer", "safetensors", "torch": printed (`info`, `load --json`, errors) and what
    // `convert --to` and the Python `format=` arguments accept.
    std::string_view name;
    // What its files are called in sentences: "torch zip" ("not a tensorizer, safetensors or
    // torch zip file").
    std::string_view title;
    // A target whose name ends with one of these is written in this format; the first names a
    // new file of it (".tensors").
    std::span<const std::string_view> extensions;
    bool stores_hashes = false;         // per-tensor checksums that a load may verify
    bool may_be_encrypted = false;      // tensors may be encrypted: a key or passphrase opens them
    bool tensors_view_storages = false; // tensors are views of shared storages (Index::storages)
    bool has_data_version = false;      // files carry a data version (Index, WriteSummary)
    // Its records can be keyed one by one in a key-value store's layout (tensorizer's redis://):
    // sources that publish only such formats (SourceKind::publishes_any_file false) take it.
    bool keys_records = false;
    // A tensor is its stored bytes at data_offset_bytes, as loaded (no record header inside, no
    // storage view): a CPU load may hand out the file's own pages (Placement::mapped).
    bool tensors_mappable = false;
    const FormatHooks* hooks = nullptr; // never null for a registered format
};

} // namespace ringload
