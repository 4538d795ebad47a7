// bindings/cpp/src/option_table.cpp
#include "ringload/options.hpp"

#include "ringload/io/source_registry.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>

namespace ringload {
namespace {

// How one shared row reads and writes its field.
struct FieldAccess {
    std::function<std::string(const OpenOptions&, const LoadOptions&)> get;
    std::function<void(OpenOptions&, LoadOptions&, std::string_view)> set; // the text is checked first
};

template <class Enum>
struct Words {
    std::vector<std::pair<std::string_view, Enum>> pairs;
    std::string_view word_of(Enum value) const {
        for (const auto& [word, each] : pairs) {
            if (each == value) {
                return word;
            }
        }
        return "";
    }
    Enum value_of(std::string_view word) const {
        for (const auto& [each, value] : pairs) {
            if (each == word) {
                return value;
            }
        }
        return pairs.front().second; // set_option checked the word against the choices
    }
    std::vector<std::string_view> choices() const {
        std::vector<std::string_view> words;
        for (const auto& pair : pairs) {
            words.push_back(pair.first);
        }
        return words;
    }
};

const Words<ReadMode> read_modes{
    {{"auto", ReadMode::automatic}, {"direct", ReadMode::direct}, {"buffered", ReadMode::buffered}}};
const Words<Placement> placements{
    {{"auto", Placement::automatic}, {"arena", Placement::arena}, {"mapped", Placement::mapped_file}}};
const Words<HttpVersion> http_versions{
    {{"auto", HttpVersion::automatic}, {"1.1", HttpVersion::http1_1}, {"2", HttpVersion::http2}}};

std::string number_text(double value) {
    if (value == std::floor(value)) {
        return std::to_string(static_cast<long long>(value));
    }
    return std::to_string(value);
}

// A NetworkOptions number field.
template <class Number>
FieldAccess network_number(Number NetworkOptions::*field) {
    return {[field](const OpenOptions& open, const LoadOptions&) { return number_text(open.network.*field); },
            [field](OpenOptions& open, LoadOptions&, std::string_view text) {
                open.network.*field = static_cast<Number>(std::strtod(std::string(text).c_str(), nullptr));
            }};
}

struct SharedRow {
    OptionRow row;
    FieldAccess access;
};

// The node-local cache's settings (NetworkOptions::cache_*; object_cache.hpp).
void add_cache_rows(std::vector<SharedRow>& rows) {
    rows.push_back({{"cache",
                     OptionKind::text,
                     {},
                     "remote sources: a directory that keeps what a load reads, so that the next load of the same "
                     "version reads it locally (/dev/shm/... for memory)"},
                    {[](const OpenOptions& o, const LoadOptions&) { return o.network.cache_dir; },
                     [](OpenOptions& o, LoadOptions&, std::string_view t) { o.network.cache_dir = std::string(t); }}});
    rows.push_back(
        {{"cache_validate",
          OptionKind::flag,
          {},
          "cache: ask the server whether the object changed (one HEAD) before using a whole entry"},
         {[](const OpenOptions& o, const LoadOptions&) {
              return std::string(o.network.cache_validate ? "true" : "false");
          },
          [](OpenOptions& o, LoadOptions&, std::string_view t) { o.network.cache_validate = t == "true"; }}});
    rows.push_back({{"cache_max_bytes",
                     OptionKind::bytes,
                     {},
                     "cache: bytes the directory may hold, least recently used entries evicted (0: no limit)"},
                    network_number(&NetworkOptions::cache_max_bytes)});
}

std::vector<SharedRow> shared_rows() {
    auto choice = [](std::string_view name, std::vector<std::string_view> choices, std::string_view help) {
        return OptionRow{name, OptionKind::choice, std::move(choices), help};
    };
    std::vector<SharedRow> rows;
    rows.push_back(
        {choice("read_mode", read_modes.choices(),
                "files: auto (O_DIRECT for cold files, the page cache for cached ones), direct or buffered"),
         {[](const OpenOptions& o, const LoadOptions&) { return std::string(read_modes.word_of(o.read_mode)); },
          [](OpenOptions& o, LoadOptions&, std::string_view t) { o.read_mode = read_modes.value_of(t); }}});
    OptionRow placement = choice("placement", placements.choices(),
                                 "CPU loads: auto, arena (the load's memory, through the ring) or mapped (a local "
                                 "safetensors file's own pages, or fail saying why)");
    placement.per_load = true;
    rows.push_back(
        {placement,
         {[](const OpenOptions&, const LoadOptions& l) { return std::string(placements.word_of(l.placement)); },
          [](OpenOptions&, LoadOptions& l, std::string_view t) { l.placement = placements.value_of(t); }}});
    rows.push_back({{"connections", OptionKind::count, {}, "network sources: connections (requests in flight)"},
                    network_number(&NetworkOptions::connections)});
    rows.push_back({{"streams", OptionKind::count, {}, "HTTP/2: streams in flight per connection"},
                    network_number(&NetworkOptions::streams_per_connection)});
    rows.push_back({{"timeout", OptionKind::seconds, {}, "network sources: seconds to connect or wait for the server"},
                    network_number(&NetworkOptions::timeout_seconds)});
    rows.push_back({{"attempts", OptionKind::count, {}, "network sources: tries per request (backoff in between)"},
                    network_number(&NetworkOptions::attempts)});
    rows.push_back({{"range_size",
                     OptionKind::bytes,
                     {},
                     "object stores and http(s): bytes per range request (0: 8 MiB) and per upload part"},
                    network_number(&NetworkOptions::range_size_bytes)});
    rows.push_back({choice("http_version", http_versions.choices(),
                           "auto, 1.1 or 2 (on http://, 2 is h2c; on https://, auto lets ALPN decide)"),
                    {[](const OpenOptions& o, const LoadOptions&) {
                         return std::string(http_versions.word_of(o.network.http_version));
                     },
                     [](OpenOptions& o, LoadOptions&, std::string_view t) {
                         o.network.http_version = http_versions.value_of(t);
                     }}});
    rows.push_back({{"ca_file",
                     OptionKind::text,
                     {},
                     "https: a PEM file (or hashed directory) of CAs to trust besides the system's"},
                    {[](const OpenOptions& o, const LoadOptions&) { return o.network.ca_file; },
                     [](OpenOptions& o, LoadOptions&, std::string_view t) { o.network.ca_file = std::string(t); }}});
    rows.push_back(
        {{"insecure", OptionKind::flag, {}, "https: do not check the server's certificate"},
         {[](const OpenOptions& o, const LoadOptions&) { return std::string(o.network.insecure ? "true" : "false"); },
          [](OpenOptions& o, LoadOptions&, std::string_view t) { o.network.insecure = t == "true"; }}});
    add_cache_rows(rows);
    return rows;
}

const std::vector<SharedRow>& shared() {
    static const std::vector<SharedRow> rows = [] {
        std::vector<SharedRow> made = shared_rows();
        const OpenOptions open;
        const LoadOptions load;
        for (SharedRow& each : made) {
            each.row.default_text = each.access.get(open, load);
        }
        return made;
    }();
    return rows;
}

std::vector<OptionRow> make_table() {
    std::vector<OptionRow> table;
    for (const SharedRow& each : shared()) {
        table.push_back(each.row);
    }
    for (const SourceKind* kind : registered_sources()) {
        for (const SourceOption& option : kind->options) {
            table.push_back({option.name,
                             option.flag ? OptionKind::flag : OptionKind::text,
                             {},
                             option.help,
                             option.flag ? "false" : "",
                             false,
                             kind->name});
        }
    }
    return table;
}

// The text a user wrote in the form set_option stores: flags as "true"/"false".
Result<std::string> checked_text(const OptionRow& row, std::string_view value) {
    const std::string text(value);
    auto refuse = [&](std::string_view wanted) {
        return fail(errc::invalid_argument,
                    "option " + std::string(row.name) + " must be " + std::string(wanted) + ", not '" + text + "'");
    };
    switch (row.kind) {
        case OptionKind::count:
        case OptionKind::bytes: {
            unsigned long long number = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
            if (ec != std::errc() || end != text.data() + text.size() || text.empty() ||
                (row.kind == OptionKind::count && number == 0)) {
                return refuse(row.kind == OptionKind::count ? "a positive integer"
                                                            : "a number of bytes (0: the default)");
            }
            return text;
        }
        case OptionKind::seconds: {
            char* end = nullptr;
            const double seconds = std::strtod(text.c_str(), &end);
            if (text.empty() || *end != '\0' || !(seconds > 0) || !std::isfinite(seconds)) {
                return refuse("a positive number of seconds");
            }
            return text;
        }
        case OptionKind::choice: {
            std::string words;
            for (std::string_view choice : row.choices) {
                if (choice == value) {
                    return text;
                }
                words += (words.empty() ? "" : ", ") + std::string(choice);
            }
            return refuse("one of " + words);
        }
        case OptionKind::flag:
            if (value == "true" || value == "1" || value == "yes") {
                return std::string("true");
            }
            if (value == "false" || value == "0" || value == "no" || value.empty()) {
                return std::string("false");
            }
            return refuse("true or false");
        case OptionKind::text:
            return text;
    }
    return text;
}

} // namespace

const std::vector<OptionRow>& option_table() {
    static const std::vector<OptionRow> table = make_table();
    return table;
}

const OptionRow* option_named(std::string_view name) {
    for (const OptionRow& row : option_table()) {
        if (row.name == name) {
            return &row;
        }
    }
    return nullptr;
}

Result<void> set_option(OpenOptions& open, LoadOptions& load, std::string_view name, std::string_view value) {
    const OptionRow* row = option_named(name);
    if (row == nullptr) {
        std::string known;
        for (const OptionRow& each : option_table()) {
            known += (known.empty() ? "" : ", ") + std::string(each.name);
        }
        return fail(errc::invalid_argument, "unknown option '" + std::string(name) + "'; the options are " + known);
    }
    RL_TRY(text, checked_text(*row, value));
    for (const SharedRow& each : shared()) {
        if (each.row.name == name) {
            each.access.set(open, load, text);
            return {};
        }
    }
    open.network.source_settings[std::string(name)] = text; // a registered source's own setting
    return {};
}

} // namespace ringload
