// bindings/cli/network_options.cpp
#include "network_options.hpp"

#include <algorithm>

namespace ringload::cli {
namespace {

std::string flag_of(std::string_view name) {
    std::string flag = "--" + std::string(name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

std::string help_of(const OptionRow& row) {
    std::string help(row.help);
    if (!row.default_text.empty() && row.kind != OptionKind::flag) {
        help += " (default " + row.default_text + ")";
    }
    return help;
}

} // namespace

void add_network_options(CLI::App& command, NetworkArgs& args, bool with_load_rows) {
    for (const OptionRow& row : option_table()) {
        if (row.per_load && !with_load_rows) {
            continue;
        }
        const std::string name(row.name);
        if (row.kind == OptionKind::flag && row.default_text == "true") {
            // On unless said: --no-cache-validate.
            command.add_flag("--no-" + flag_of(row.name).substr(2), args.negated[name],
                             "Turn off: " + std::string(row.help));
        } else if (row.kind == OptionKind::flag) {
            command.add_flag(flag_of(row.name), args.flags[name], help_of(row));
        } else {
            // Checked by set_option, whose message names the option and what it must be.
            command.add_option(flag_of(row.name), args.given[name], help_of(row));
        }
    }
}

Result<void> apply_options(const NetworkArgs& args, OpenOptions& open, LoadOptions& load) {
    for (const auto& [name, text] : args.given) {
        if (text.empty()) {
            continue;
        }
        if (auto set = set_option(open, load, name, text); !set) {
            return with_context(set.error(), flag_of(name)); // the flag as the user wrote it
        }
    }
    for (const auto& [name, given] : args.flags) {
        if (given) {
            RL_TRY_VOID(set_option(open, load, name, "true"));
        }
    }
    for (const auto& [name, given] : args.negated) {
        if (given) {
            RL_TRY_VOID(set_option(open, load, name, "false"));
        }
    }
    return {};
}

} // namespace ringload::cli
