// bindings/cli/commands.hpp
//
// Each subcommand registers its options on the CLI11 app and runs when chosen. A command
// returns the process exit status; errors are printed as one line on stderr by main.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace ringload::cli {

using Run = std::function<int()>;

Run add_info_command(CLI::App& app);
Run add_load_command(CLI::App& app);
Run add_convert_command(CLI::App& app);
Run add_bench_command(CLI::App& app);
Run add_verify_command(CLI::App& app); // signature_commands.cpp
Run add_sign_command(CLI::App& app);   // signature_commands.cpp

// Prints "ringload: <message>" on stderr and returns the failure status.
int report_error(const std::string& message);

} // namespace ringload::cli
