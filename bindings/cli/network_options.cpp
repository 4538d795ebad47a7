// bindings/cli/network_options.cpp
#include "network_options.hpp"

namespace ringload::cli {

void add_network_options(CLI::App& command, NetworkArgs& args) {
    OpenOptions& o = args.options;
    command.add_option("--connections", o.connections, "http(s) sources: range requests in flight");
    command.add_option("--timeout", o.timeout_seconds, "http(s) sources: seconds to connect or wait for the server");
    command.add_option("--attempts", o.attempts, "http(s) sources: tries per request (backoff in between)");
    command.add_option("--ca-file", o.ca_file, "https: a PEM file of CAs to trust besides the system's");
    command.add_flag("--insecure", o.insecure, "https: do not check the server's certificate");
}

void apply_network_options(const NetworkArgs& args, OpenOptions& open_options) {
    open_options.connections = args.options.connections;
    open_options.timeout_seconds = args.options.timeout_seconds;
    open_options.attempts = args.options.attempts;
    open_options.ca_file = args.options.ca_file;
    open_options.insecure = args.options.insecure;
}

} // namespace ringload::cli
