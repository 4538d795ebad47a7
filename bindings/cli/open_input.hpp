// bindings/cli/open_input.hpp
//
// What info, load and convert do first: read the key options, then open the input (a path or
// a URL) with them and the network options.
#pragma once

#include "key_options.hpp"
#include "network_options.hpp"

#include "ringload/ringload.hpp"

#include <string>

namespace ringload::cli {

// The help text of info's and load's URI argument: every source open_input reads.
inline constexpr const char* input_uri_help =
    "Model to read: a file path or file:// URI, an http:// or https:// URL, s3://bucket/key or redis://host/prefix";

Result<Deserializer> open_input(const std::string& uri, const KeyFileArgs& keys, const NetworkArgs& network,
                                ReadMode read_mode = ReadMode::automatic);

} // namespace ringload::cli
