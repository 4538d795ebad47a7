// options/option_table.cpp: the option table (ringload/options.hpp) from the rows of
// option_rows.hpp and the registered sources', each value checked against its row, and the
// settings finished together.
#include "options/option_rows.hpp"

#include "ringload/io/source_registry.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>

namespace ringload {
namespace {

using options::SharedRow;

const std::vector<SharedRow>& shared() {
    static const std::vector<SharedRow> rows = [] {
        std::vector<SharedRow> made;
        options::add_network_rows(made);
        options::add_load_rows(made);
        options::add_signature_rows(made);
        options::add_server_rows(made);
        const LoadSettings defaults;
        for (SharedRow& each : made) {
            each.row.default_text = each.access.get(defaults);
        }
        return made;
    }();
    return rows;
}

const SharedRow* shared_named(std::string_view name) {
    for (const SharedRow& each : shared()) {
        if (each.row.name == name) {
            return &each;
        }
    }
    return nullptr;
}

std::vector<OptionRow> make_table() {
    std::vector<OptionRow> table;
    for (const SharedRow& each : shared()) {
        table.push_back(each.row);
    }
    for (const SourceKind* kind : registered_sources()) {
        for (const SourceOption& option : kind->options) {
            table.push_back({option.name,
                             option.flag ? OptionKind::flag : OptionKind::text,
                             {},
                             option.help,
                             option.flag ? "false" : "",
                             false,
                             kind->name});
        }
    }
    return table;
}

bool whole_number(const OptionRow& row, const std::string& text) {
    unsigned long long number = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty() &&
           (row.kind != OptionKind::count || number != 0);
}

// A number of bytes as people write it: 4096, 512K, 512M, 2G, 1GiB, 1T (K = 1024, as the CLI's
// --memory-budget always took it), as the whole number; nothing for anything else.
std::optional<std::string> bytes_text(std::string_view value) {
    std::uint64_t number = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
    if (ec != std::errc() || end == value.data()) {
        return std::nullopt;
    }
    std::string unit(end, value.data() + value.size());
    for (char& c : unit) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    if (unit.ends_with("IB")) {
        unit.resize(unit.size() - 2);
    } else if (unit.size() == 2 && unit.back() == 'B') {
        unit.pop_back();
    }
    std::size_t shift = 0;
    if (!unit.empty()) {
        const std::size_t at = unit.size() == 1 ? std::string_view("KMGT").find(unit[0]) : std::string_view::npos;
        if (at == std::string_view::npos) {
            return std::nullopt;
        }
        shift = 10 * (at + 1);
    }
    if (number > (std::numeric_limits<std::uint64_t>::max() >> shift)) {
        return std::nullopt;
    }
    return std::to_string(number << shift);
}

// The value's text if it is of the row's kind (flags as "true"/"false", bytes as the number),
// else nothing.
std::optional<std::string> kind_text(const OptionRow& row, std::string_view value) {
    const std::string text(value);
    switch (row.kind) {
        case OptionKind::bytes:
            return bytes_text(value);
        case OptionKind::count:
        case OptionKind::integer:
            return whole_number(row, text) ? std::optional(text) : std::nullopt;
        case OptionKind::seconds: {
            char* end = nullptr;
            const double seconds = std::strtod(text.c_str(), &end);
            const bool positive = !text.empty() && *end == '\0' && seconds > 0 && std::isfinite(seconds);
            return positive ? std::optional(text) : std::nullopt;
        }
        case OptionKind::choice:
            for (std::string_view choice : row.choices) {
                if (choice == value) {
                    return text;
                }
            }
            return std::nullopt;
        case OptionKind::flag:
            if (value == "true" || value == "1" || value == "yes") {
                return std::string("true");
            }
            if (value == "false" || value == "0" || value == "no" || value.empty()) {
                return std::string("false");
            }
            return std::nullopt;
        case OptionKind::text:
        case OptionKind::list:
            return text;
    }
    return text;
}

// The names of the rows `wanted` picks, in the table's order.
template <class Wanted>
std::vector<std::string> names_where(Wanted wanted) {
    std::vector<std::string> names;
    for (const OptionRow& each : option_table()) {
        if (wanted(each)) {
            names.emplace_back(each.name);
        }
    }
    return names;
}

// Whom to trust is given once, the keyless words together, and none of them without the
// signature (they would be ignored).
Result<void> check_signature_words(const LoadSettings& settings) {
    const SignatureCheck& check = settings.signature;
    const int trusts = int(!check.public_key_file.empty()) + int(!check.certificate_chain_files.empty()) +
                       int(!check.trust_root_file.empty());
    if (check.signature_file.empty()) {
        const bool stray = trusts > 0 || !check.identity.empty() || !check.identity_issuer.empty() ||
                           !check.ignore_paths.empty() || !settings.model_folder.empty();
        if (stray) {
            return fail(errc::invalid_argument,
                        "public_key, certificate_chain, trust_root, identity, identity_issuer, "
                        "ignore_paths and model_folder need signature: give the model's "
                        "signature file");
        }
        return {};
    }
    if (trusts > 1) {
        return fail(errc::invalid_argument, "give one of public_key, certificate_chain or trust_root, not several");
    }
    if ((!check.identity.empty() || !check.identity_issuer.empty()) && check.trust_root_file.empty()) {
        return fail(errc::invalid_argument, "identity and identity_issuer are a keyless signature's: give trust_root");
    }
    return {};
}

} // namespace

const std::vector<OptionRow>& option_table() {
    static const std::vector<OptionRow> table = make_table();
    return table;
}

const OptionRow* option_named(std::string_view name) {
    for (const OptionRow& row : option_table()) {
        if (row.name == name) {
            return &row;
        }
    }
    return nullptr;
}

Error unknown_option(std::string_view name, const std::vector<std::string>& known) {
    std::string listed;
    for (const std::string& each : known) {
        listed += (listed.empty() ? "" : ", ") + each;
    }
    return fail(errc::invalid_argument, "unknown option '" + std::string(name) + "'; the options are " + listed);
}

std::string option_value(const LoadSettings& settings, std::string_view name) {
    const SharedRow* shared_row = shared_named(name);
    return shared_row != nullptr ? shared_row->access.get(settings) : std::string();
}

std::string cli_flag_of(const OptionRow& row) {
    if (!row.cli_flag.empty()) {
        return std::string(row.cli_flag);
    }
    std::string flag = "--" + std::string(row.name);
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

std::string what_option_takes(const OptionRow& row) {
    switch (row.kind) {
        case OptionKind::count:
            return "a positive integer";
        case OptionKind::bytes:
            return "a number of bytes, as 4096, 512K, 64M or 2G (0: the default)";
        case OptionKind::integer:
            return "a whole number (0: the default)";
        case OptionKind::seconds:
            return "a positive number of seconds";
        case OptionKind::choice: {
            std::string words;
            for (std::string_view choice : row.choices) {
                words += (words.empty() ? "" : ", ") + std::string(choice);
            }
            return "one of " + words;
        }
        case OptionKind::flag:
            return "true or false";
        case OptionKind::text:
            return "a text";
        case OptionKind::list:
            return "a text or a list of texts";
    }
    return "a text";
}

Result<std::string> checked_option_text(const OptionRow& row, std::string_view value) {
    auto refuse = [&](const std::string& wanted) {
        return fail(errc::invalid_argument,
                    "option " + std::string(row.name) + " must be " + wanted + ", not '" + std::string(value) + "'");
    };
    auto text = kind_text(row, value);
    if (!text) {
        return refuse(what_option_takes(row));
    }
    // (A write's rows are a table of their own, whose names may be a load row's too.)
    const SharedRow* shared_row = row.target == OptionTarget::write ? nullptr : shared_named(row.name);
    if (shared_row != nullptr && shared_row->access.check) {
        if (auto checked = shared_row->access.check(*text); !checked) {
            return refuse(checked.error().detail);
        }
    }
    return std::move(*text);
}

Result<void> set_option(LoadSettings& settings, std::string_view name, std::string_view value, std::uint8_t front) {
    const OptionRow* row = option_named(name);
    if (row == nullptr || (row->fronts & front) == 0) {
        return unknown_option(name, names_where([front](const OptionRow& each) { return (each.fronts & front) != 0; }));
    }
    RL_TRY(text, checked_option_text(*row, value));
    if (const SharedRow* shared_row = shared_named(name); shared_row != nullptr) {
        shared_row->access.set(settings, text);
        return {};
    }
    settings.open.network.source_settings[std::string(name)] = text; // a registered source's own setting
    return {};
}

std::uint32_t slots_for_ring(std::size_t ring_bytes, std::size_t slot_size_bytes) {
    const std::size_t slot = slot_size_bytes != 0 ? slot_size_bytes : 4U << 20U;
    return static_cast<std::uint32_t>(
        std::clamp<std::size_t>(ring_bytes / slot, 1, std::numeric_limits<std::uint32_t>::max()));
}

Result<void> finish_settings(LoadSettings& settings) {
    if (!settings.key_file.empty() && !settings.passphrase_file.empty()) {
        return fail(errc::invalid_argument, "give key_file or passphrase_file, not both");
    }
    if (!settings.key_file.empty()) {
        RL_TRY(params, DecryptionParams::from_key_file(settings.key_file));
        settings.open.decryption = std::move(params);
    } else if (!settings.passphrase_file.empty()) {
        RL_TRY(params, DecryptionParams::from_passphrase_file(settings.passphrase_file));
        settings.open.decryption = std::move(params);
    }
    if (settings.ring_bytes != 0 && settings.load.slot_count == 0) {
        settings.load.slot_count = slots_for_ring(settings.ring_bytes, settings.load.slot_size_bytes);
    }
    settings.signature.threads = settings.load.worker_threads;
    return check_signature_words(settings);
}

Result<void> set_option(OpenOptions& open, LoadOptions& load, std::string_view name, std::string_view value) {
    const OptionRow* row = option_named(name);
    if (row != nullptr && (row->target == OptionTarget::open || row->target == OptionTarget::load)) {
        LoadSettings settings;
        settings.open = std::move(open);
        settings.load = std::move(load);
        auto set = set_option(settings, name, value);
        open = std::move(settings.open);
        load = std::move(settings.load);
        return set;
    }
    // Not one of the engine's open or load rows: the same words as any unknown option.
    return unknown_option(name, names_where([](const OptionRow& each) {
                              return each.target == OptionTarget::open || each.target == OptionTarget::load;
                          }));
}

} // namespace ringload
