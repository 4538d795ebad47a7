// bindings/cli/open_input.hpp
//
// What info, load and convert do first: open the input (a path or a URL) with the option
// table's settings (the network rows, the key files read by finish_settings).
#pragma once

#include "table_options.hpp"

#include "ringload/io/source_registry.hpp"
#include "ringload/ringload.hpp"

#include <string>

namespace ringload::cli {

// The help text of info's and load's URI argument: every source open_input reads (the
// registered ones, source_registry.hpp).
inline std::string input_uri_help() {
    return "Model to read: a file path or file:// URI, or " + source_forms_text();
}

inline Result<Deserializer> open_input(const std::string& uri, const LoadSettings& settings) {
    return Deserializer::open(uri, settings.open);
}

} // namespace ringload::cli
