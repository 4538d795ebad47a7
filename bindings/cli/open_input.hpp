// bindings/cli/open_input.hpp
//
// What info, load and convert do first: read the key options, then open the input (a path or
// a URL) with them and the network options.
#pragma once

#include "key_options.hpp"
#include "network_options.hpp"

#include "ringload/io/source_registry.hpp"
#include "ringload/ringload.hpp"

#include <string>

namespace ringload::cli {

// The help text of info's and load's URI argument: every source open_input reads (the
// registered ones, source_registry.hpp).
inline std::string input_uri_help() {
    return "Model to read: a file path or file:// URI, or " + source_forms_text();
}

Result<Deserializer> open_input(const std::string& uri, const KeyFileArgs& keys, const NetworkArgs& network);

} // namespace ringload::cli
