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

Result<Deserializer> open_input(const std::string& uri, const KeyFileArgs& keys, const NetworkArgs& network,
                                ReadMode read_mode = ReadMode::automatic);

} // namespace ringload::cli
