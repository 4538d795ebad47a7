// bindings/cli/network_options.hpp
//
// The options of the option table (ringload/options.hpp) as flags: --read-mode, --connections,
// --timeout, --http-version, --s3-endpoint, --gcs-endpoint, ... (every registered source's
// too), each with its default and help from the table. `load` takes every row; `info` and
// `convert` the rows of opening a source (not per_load ones).
#pragma once

#include "ringload/options.hpp"
#include "ringload/ringload.hpp"

#include <CLI/CLI.hpp>

#include <map>
#include <string>

namespace ringload::cli {

struct NetworkArgs {
    std::map<std::string, std::string> given; // option name -> text, for those on the command line
    std::map<std::string, bool> flags;        // flag rows: set when given
    std::map<std::string, bool> negated;      // flag rows on by default: --no-NAME given
};

void add_network_options(CLI::App& command, NetworkArgs& args, bool with_load_rows = false);

// The options given, over defaults: an option of the wrong kind fails naming it.
Result<void> apply_options(const NetworkArgs& args, OpenOptions& open, LoadOptions& load);

} // namespace ringload::cli
