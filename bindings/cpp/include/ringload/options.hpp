// ringload/options.hpp
//
// The settings a user gives by name, in one table: every front end's names come from it (the
// CLI's --flags, Python's keyword arguments, the vLLM/SGLang extra config, the README's list),
// with the default taken from OpenOptions/LoadOptions themselves, so that an option is one row
// here and nothing in the front ends. Registered sources add their own rows
// (SourceKind::options): a new source's settings appear everywhere without code.
//
//     OpenOptions open;
//     LoadOptions load;
//     RL_TRY_VOID(set_option(open, load, "connections", "16"));
//     RL_TRY_VOID(set_option(open, load, "gcs_endpoint", "http://127.0.0.1:4443"));
#pragma once

#include "ringload/error.hpp"
#include "ringload/ringload.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ringload {

enum class OptionKind : std::uint8_t {
    count,   // a positive integer
    bytes,   // an integer, 0 for the default
    seconds, // a positive number
    choice,  // one of OptionRow::choices
    text,    // any text (a URL, a path)
    flag,    // true or false
};

struct OptionRow {
    std::string_view name; // snake_case; the CLI's flag is --name-with-dashes
    OptionKind kind = OptionKind::text;
    std::vector<std::string_view> choices; // OptionKind::choice
    std::string_view help;                 // one line
    std::string default_text;              // as a user would write it ("8", "auto", "false"; "" for none)
    bool per_load = false;                 // a LoadOptions field (else OpenOptions)
    std::string_view source;               // the registered source whose option it is ("s3"), else ""
};

// The shared rows, then each registered source's, in registry order.
const std::vector<OptionRow>& option_table();

// The row called `name`, or null.
const OptionRow* option_named(std::string_view name);

// Sets option `name` from its text. An unknown name, or a value of the wrong kind, fails naming
// the option and what it must be.
Result<void> set_option(OpenOptions& open, LoadOptions& load, std::string_view name, std::string_view value);

} // namespace ringload
