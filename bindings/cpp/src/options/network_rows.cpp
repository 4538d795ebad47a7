// options/network_rows.cpp: the rows of opening a file or URL (OpenOptions): how files are
// read, the network sources' connections, retries and TLS, and the node-local cache.
#include "options/option_rows.hpp"

#include <cmath>
#include <cstdlib>

namespace ringload::options {
namespace {

const Words<ReadMode> read_modes{
    {{"auto", ReadMode::automatic}, {"direct", ReadMode::direct}, {"buffered", ReadMode::buffered}}};
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
    return {[field](const LoadSettings& s) { return number_text(s.open.network.*field); },
            [field](LoadSettings& s, std::string_view text) {
                s.open.network.*field = static_cast<Number>(std::strtod(std::string(text).c_str(), nullptr));
            },
            {}};
}

// A NetworkOptions text field.
FieldAccess network_text(std::string NetworkOptions::*field) {
    return {[field](const LoadSettings& s) { return s.open.network.*field; },
            [field](LoadSettings& s, std::string_view text) { s.open.network.*field = std::string(text); },
            {}};
}

// A NetworkOptions flag.
FieldAccess network_flag(bool NetworkOptions::*field) {
    return {[field](const LoadSettings& s) { return flag_text(s.open.network.*field); },
            [field](LoadSettings& s, std::string_view text) { s.open.network.*field = text == "true"; },
            {}};
}

OptionRow open_row(std::string_view name, OptionKind kind, std::string_view help) {
    return OptionRow{name, kind, {}, help};
}

// The node-local cache's settings (NetworkOptions::cache_*; object_cache.hpp).
void add_cache_rows(std::vector<SharedRow>& rows) {
    rows.push_back({open_row("cache", OptionKind::text,
                             "remote sources: a directory that keeps what a load reads, so that the next load of the "
                             "same version reads it locally (/dev/shm/... for memory)"),
                    network_text(&NetworkOptions::cache_dir)});
    rows.push_back({open_row("cache_validate", OptionKind::flag,
                             "cache: ask the server whether the object changed (one HEAD) before using a whole entry"),
                    network_flag(&NetworkOptions::cache_validate)});
    rows.push_back({open_row("cache_max_bytes", OptionKind::bytes,
                             "cache: bytes the directory may hold, least recently used entries evicted (0: no limit)"),
                    network_number(&NetworkOptions::cache_max_bytes)});
}

} // namespace

void add_network_rows(std::vector<SharedRow>& rows) {
    rows.push_back({OptionRow{"read_mode", OptionKind::choice, read_modes.choices(),
                              "files: auto (O_DIRECT for cold files, the page cache for cached ones), direct or "
                              "buffered"},
                    choice_access(
                        read_modes, [](auto& s) -> auto& { return s.open.read_mode; })});
    rows.push_back({open_row("connections", OptionKind::count, "network sources: connections (requests in flight)"),
                    network_number(&NetworkOptions::connections)});
    rows.push_back({open_row("streams", OptionKind::count, "HTTP/2: streams in flight per connection"),
                    network_number(&NetworkOptions::streams_per_connection)});
    rows.push_back(
        {open_row("timeout", OptionKind::seconds, "network sources: seconds to connect or wait for the server"),
         network_number(&NetworkOptions::timeout_seconds)});
    rows.push_back({open_row("attempts", OptionKind::count, "network sources: tries per request (backoff in between)"),
                    network_number(&NetworkOptions::attempts)});
    rows.push_back({open_row("range_size", OptionKind::bytes,
                             "object stores and http(s): bytes per range request (0: 8 MiB) and per upload part"),
                    network_number(&NetworkOptions::range_size_bytes)});
    rows.push_back({OptionRow{"http_version", OptionKind::choice, http_versions.choices(),
                              "auto, 1.1 or 2 (on http://, 2 is h2c; on https://, auto lets ALPN decide)"},
                    choice_access(
                        http_versions, [](auto& s) -> auto& { return s.open.network.http_version; })});
    rows.push_back({open_row("ca_file", OptionKind::text,
                             "https: a PEM file (or hashed directory) of CAs to trust besides the system's"),
                    network_text(&NetworkOptions::ca_file)});
    rows.push_back({open_row("insecure", OptionKind::flag, "https: do not check the server's certificate"),
                    network_flag(&NetworkOptions::insecure)});
    add_cache_rows(rows);
}

} // namespace ringload::options
