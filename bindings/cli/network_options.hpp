// bindings/cli/network_options.hpp
//
// The options every command that reads or writes a URL takes: --connections, --streams,
// --timeout, --attempts, --range-size, --http-version, --s3-endpoint, --ca-file, --insecure
// (defaults: NetworkOptions').
#pragma once

#include "ringload/ringload.hpp"

#include <CLI/CLI.hpp>

namespace ringload::cli {

struct NetworkArgs {
    NetworkOptions network;
    std::string http_version; // "1.1", "2" or empty (automatic)
};

void add_network_options(CLI::App& command, NetworkArgs& args);

NetworkOptions network_options(const NetworkArgs& args);

} // namespace ringload::cli
