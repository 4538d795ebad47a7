// bindings/cli/table_options.hpp
//
// The option table (ringload/options.hpp) as flags: every row the CLI takes becomes
// --name-with-dashes (or the row's cli_flag), with its help and default from the table; a
// command picks the rows it takes by what they set (open, load, keys, signature). The values
// are checked by set_option, whose words are the same in Python and the server loaders.
#pragma once

#include "ringload/options.hpp"

#include <CLI/CLI.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ringload::cli {

struct TableArgs {
    std::map<std::string, std::string> given;              // option name -> text, for those on the command line
    std::map<std::string, std::vector<std::string>> lists; // list rows: each value given
    std::map<std::string, bool> flags;                     // flag rows: set when given
    std::map<std::string, bool> negated;                   // flag rows on by default: --no-NAME given
    // The command: what it did not know is kept (allow_extras) and refused by
    // apply_table_options in the option table's words, listing its flags.
    const CLI::App* command = nullptr;
};

using RowWanted = std::function<bool(const OptionRow&)>;

// Rows whose target is one of `targets` (the CLI's rows only).
RowWanted rows_setting(std::vector<OptionTarget> targets);

// The rows of `table` (the load's, or write_option_table()) that `wanted` picks, as flags.
void add_table_options(CLI::App& command, TableArgs& args, const RowWanted& wanted,
                       const std::vector<OptionRow>& table = option_table());

// The options given, over defaults, then finish_settings: an unknown flag fails listing the
// command's, a value of the wrong kind naming the flag as the user wrote it.
Result<void> apply_table_options(const TableArgs& args, LoadSettings& settings);
// The same for a write's rows, then finish_write_settings. (Its TableArgs has no `command`
// where the command's load rows already refuse what it does not know.)
Result<void> apply_write_options(const TableArgs& args, WriteSettings& settings);

} // namespace ringload::cli
