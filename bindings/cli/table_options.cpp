// bindings/cli/table_options.cpp
#include "table_options.hpp"

#include <algorithm>

namespace ringload::cli {
namespace {

std::string help_of(const OptionRow& row) {
    std::string help(row.help);
    if (!row.default_text.empty() && row.kind != OptionKind::flag) {
        help += " (default " + row.default_text + ")";
    }
    return help;
}

// What the command did not know: "unknown option '--thread'; the options are --device, ...",
// as set_option words an unknown name for Python and the server loaders.
Result<void> refuse_extras(const CLI::App& command) {
    const std::vector<std::string> extras = command.remaining();
    if (extras.empty()) {
        return {};
    }
    std::string unknown = extras.front();
    for (const std::string& each : extras) {
        if (each.rfind('-', 0) == 0) {
            unknown = each;
            break;
        }
    }
    std::vector<std::string> known;
    for (const CLI::Option* option : command.get_options()) {
        if (!option->get_lnames().empty() && option->get_lnames().front() != "help") {
            known.push_back("--" + option->get_lnames().front());
        }
    }
    return unknown_option(unknown, known);
}

} // namespace

RowWanted rows_setting(std::vector<OptionTarget> targets) {
    return [targets = std::move(targets)](const OptionRow& row) {
        return std::find(targets.begin(), targets.end(), row.target) != targets.end();
    };
}

void add_table_options(CLI::App& command, TableArgs& args, const RowWanted& wanted,
                       const std::vector<OptionRow>& table) {
    args.command = &command;
    command.allow_extras();
    for (const OptionRow& row : table) {
        if ((row.fronts & front_cli) == 0 || !wanted(row)) {
            continue;
        }
        const std::string name(row.name);
        const std::string flag = cli_flag_of(row);
        if (row.kind == OptionKind::flag && row.default_text == "true" && !row.cli_flag.empty()) {
            // On unless said, with a flag of its own: a value (convert's --verify false).
            command.add_option(flag, args.given[name], help_of(row) + " (true or false, default true)");
        } else if (row.kind == OptionKind::flag && row.default_text == "true") {
            // On unless said: --no-cache-validate.
            command.add_flag("--no-" + flag.substr(2), args.negated[name], "Turn off: " + std::string(row.help));
        } else if (row.kind == OptionKind::flag) {
            command.add_flag(flag, args.flags[name], help_of(row));
        } else if (row.kind == OptionKind::list) {
            command.add_option(flag, args.lists[name], help_of(row) + " (repeat)");
        } else {
            // Checked by set_option, whose message names the option and what it must be.
            command.add_option(flag, args.given[name], help_of(row));
        }
    }
}

namespace {

// Each option given, through `set` (name, text), in the order: values, list values, flags, then
// the flags turned off.
Result<void> apply_given(const TableArgs& args,
                         const std::function<Result<void>(const std::string&, const std::string&)>& set) {
    if (args.command != nullptr) {
        RL_TRY_VOID(refuse_extras(*args.command));
    }
    for (const auto& [name, text] : args.given) {
        if (!text.empty()) {
            RL_TRY_VOID(set(name, text));
        }
    }
    for (const auto& [name, values] : args.lists) {
        for (const std::string& value : values) {
            RL_TRY_VOID(set(name, value));
        }
    }
    for (const auto& [name, given] : args.flags) {
        if (given) {
            RL_TRY_VOID(set(name, "true"));
        }
    }
    for (const auto& [name, given] : args.negated) {
        if (given) {
            RL_TRY_VOID(set(name, "false"));
        }
    }
    return {};
}

} // namespace

Result<void> apply_table_options(const TableArgs& args, LoadSettings& settings) {
    RL_TRY_VOID(apply_given(args, [&settings](const std::string& name, const std::string& text) -> Result<void> {
        if (auto applied = set_option(settings, name, text, front_cli); !applied) {
            return with_context(applied.error(), cli_flag_of(*option_named(name))); // the flag as the user wrote it
        }
        return {};
    }));
    return finish_settings(settings);
}

Result<void> apply_write_options(const TableArgs& args, WriteSettings& settings) {
    RL_TRY_VOID(apply_given(args, [&settings](const std::string& name, const std::string& text) -> Result<void> {
        if (auto applied = set_write_option(settings, name, text, front_cli); !applied) {
            return with_context(applied.error(), cli_flag_of(*write_option_named(name)));
        }
        return {};
    }));
    return finish_write_settings(settings);
}

} // namespace ringload::cli
