// bindings/cli/network_options.hpp
//
// The options every command that reads a URL takes: --connections, --timeout, --attempts,
// --ca-file, --insecure (defaults: OpenOptions').
#pragma once

#include "ringload/ringload.hpp"

#include <CLI/CLI.hpp>

namespace ringload::cli {

struct NetworkArgs {
    OpenOptions options; // only its network fields are set from the command line
};

void add_network_options(CLI::App& command, NetworkArgs& args);

// Copies the network fields into `open_options`.
void apply_network_options(const NetworkArgs& args, OpenOptions& open_options);

} // namespace ringload::cli
