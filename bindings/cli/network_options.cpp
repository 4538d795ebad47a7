// bindings/cli/network_options.cpp
#include "network_options.hpp"

namespace ringload::cli {

void add_network_options(CLI::App& command, NetworkArgs& args) {
    NetworkOptions& o = args.network;
    command.add_option("--connections", o.connections, "network sources: connections (requests in flight)");
    command.add_option("--streams", o.streams_per_connection, "HTTP/2: streams in flight per connection");
    command.add_option("--timeout", o.timeout_seconds, "network sources: seconds to connect or wait for the server");
    command.add_option("--attempts", o.attempts, "network sources: tries per request (backoff in between)");
    command.add_option("--range-size", o.range_size_bytes,
                       "http(s)/s3: bytes per range request (default 8 MiB); s3 uploads: bytes per part (default 16 "
                       "MiB, at least 5 MiB)");
    command
        .add_option("--http-version", args.http_version, "1.1 or 2 (on http://, 2 is h2c; on https://, ALPN decides)")
        ->check(CLI::IsMember({"1.1", "2"}));
    command.add_option("--s3-endpoint", o.s3.endpoint, "s3://: the endpoint URL (default: environment, ~/.s3cfg, AWS)");
    command.add_option("--ca-file", o.ca_file, "https: a PEM file of CAs to trust besides the system's");
    command.add_flag("--insecure", o.insecure, "https: do not check the server's certificate");
}

NetworkOptions network_options(const NetworkArgs& args) {
    NetworkOptions options = args.network;
    if (!args.http_version.empty()) {
        options.http_version = args.http_version == "2" ? HttpVersion::http2 : HttpVersion::http1_1;
    }
    return options;
}

} // namespace ringload::cli
