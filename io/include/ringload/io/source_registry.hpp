// io/include/ringload/io/source_registry.hpp
//
// Every remote source ringload reads from (and writes to), in one list (source_registry.cpp:
// one line per source), and what the rest of the library asks of it: which source takes a URI,
// which options it has beyond the network options every source shares, how to open it and how
// to put a finished file there. Local paths and file:// URIs are no registered source: they
// are what no source takes (the file source, with its read modes, opens them).
//
//     const SourceKind* kind = source_for("gs://models/llama.safetensors"); // null: a local path
//     RL_TRY(source, run_on_loop(loop, kind->open(loop, uri, network)));
//
// A new source is its own files under io/ (a `SourceKind` describing it, next to its open and
// publish functions) and one line in source_registry.cpp; its options reach the CLI, Python and
// the vLLM/SGLang options through the option table (ringload/options.hpp) with no code there.
// Thread: open and publish run on the loop thread; the rest anywhere.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/io/network_options.hpp"
#include "ringload/tensor_info.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace ringload {

struct HttpSourceOptions;

// A setting a source takes beyond NetworkOptions' shared ones. Its value travels as text in
// NetworkOptions::source_settings under `name`; the source parses it when it opens.
struct SourceOption {
    std::string_view name; // snake_case: the Python keyword and vLLM option; the CLI's --name-with-dashes
    std::string_view help; // one line, for --help, docstrings and the README's table
    bool flag = false;     // "true" or "false" (a CLI flag without a value); else any text
};

struct SourceKind {
    std::string_view name;      // "s3": for messages and `ringload info`
    std::string_view uri_forms; // "s3://BUCKET/KEY": for docs and the message naming what is read
    bool (*handles)(std::string_view uri) = nullptr;
    std::span<const SourceOption> options;
    Task<Result<std::unique_ptr<Source>>> (*open)(asio::io_context& loop, std::string uri,
                                                  const NetworkOptions& network) = nullptr;
    // Puts a finished local file at `uri` whole or not at all, and says how ("S3 multipart
    // upload, 3 parts of 16 MiB"). `written` is the file's index (Redis keys its records by
    // it). Null: the source is read-only.
    Task<Result<std::string>> (*publish)(asio::io_context& loop, std::string local_path, std::string uri,
                                         const NetworkOptions& network, const Index& written) = nullptr;
    // Whether publish takes any file's bytes (an object store), or only a format whose records
    // it keys one by one (Redis: Format::keys_records).
    bool publishes_any_file = true;
};

// In the order sources are asked whether they take a URI.
std::span<const SourceKind* const> registered_sources() noexcept;

// The source that takes `uri`, or null: a local path or file:// URI.
const SourceKind* source_for(std::string_view uri) noexcept;

// The path of a local file URI (one no source takes): a plain path, or file://PATH. Another
// scheme:// is refused with the forms ringload reads (not looked for as a relative path).
Result<std::string> local_path_of(std::string_view uri);

// "http://HOST/PATH, https://HOST/PATH, s3://BUCKET/KEY, ...": the URI forms ringload reads, for
// a message about a URI none takes.
std::string source_forms_text();

// The setting `name` of a source (NetworkOptions::source_settings), "" when not given.
std::string_view source_setting(const NetworkOptions& network, std::string_view name);
// A flag setting: true for "true"/"1"/"yes"; false when not given.
bool source_flag(const NetworkOptions& network, std::string_view name);

// The HTTP(S) settings every source built on the HTTP source shares (connections, timeouts,
// attempts, TLS, the range size): what an object store's source passes to open_http_source.
HttpSourceOptions http_source_options(const NetworkOptions& network);

} // namespace ringload
