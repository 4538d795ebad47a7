// options/write_rows.cpp: a write's rows (ringload/options.hpp's write_option_table): what
// `ringload convert`, Python's convert and vllm_convert take by name, each with how it reads and
// writes its field of WriteSettings; set_write_option and finish_write_settings.
#include "ringload/crypto_params.hpp"
#include "ringload/formats.hpp"
#include "ringload/options.hpp"

#include <cstdlib>
#include <functional>

namespace ringload {
namespace {

struct WriteRow {
    OptionRow row;
    std::function<std::string(const WriteSettings&)> get;
    std::function<void(WriteSettings&, std::string_view)> set; // the text is checked first
};

OptionRow write_row(std::string_view name, OptionKind kind, std::string_view help,
                    std::uint8_t fronts = front_cli | front_python, std::string_view cli_flag = {}) {
    OptionRow row{name, kind, {}, help};
    row.target = OptionTarget::write;
    row.fronts = fronts;
    row.cli_flag = cli_flag;
    return row;
}

// A text field of WriteSettings (a file's path).
template <class Field>
WriteRow text_row(OptionRow row, Field field) {
    return {std::move(row), [field](const WriteSettings& s) { return std::invoke(field, s); },
            [field](WriteSettings& s, std::string_view text) { std::invoke(field, s) = std::string(text); }};
}

std::vector<std::string_view> format_names() {
    std::vector<std::string_view> names;
    for (const Format* format : registered_formats()) {
        names.push_back(format->name);
    }
    return names;
}

std::vector<WriteRow> make_rows() {
    std::vector<WriteRow> rows;
    OptionRow format = write_row("format", OptionKind::choice,
                                 "the target's format (default: from its extension: .safetensors; .pt, .pth, "
                                 ".bin; else tensorizer)",
                                 front_cli | front_python, "--to");
    format.choices = format_names();
    rows.push_back(text_row(
        std::move(format), [](auto& s) -> auto& { return s.convert.format; }));
    // (On by default, with a flag of its own: the CLI takes --verify true|false, as it always did.)
    OptionRow verify =
        write_row("verify_hash", OptionKind::flag, "check a tensorizer source's stored hashes on the way",
                  front_cli | front_python, "--verify");
    rows.push_back({std::move(verify),
                    [](const WriteSettings& s) { return s.convert.verify_hashes ? "true" : "false"; },
                    [](WriteSettings& s, std::string_view text) { s.convert.verify_hashes = text == "true"; }});
    rows.push_back({write_row("memory_budget", OptionKind::bytes,
                              "tensor bytes held in memory at once (e.g. 512M, 2G; one larger tensor is held whole)"),
                    [](const WriteSettings& s) { return std::to_string(s.convert.memory_budget_bytes); },
                    [](WriteSettings& s, std::string_view text) {
                        const std::uint64_t bytes = std::strtoull(std::string(text).c_str(), nullptr, 10);
                        s.convert.memory_budget_bytes = bytes != 0 ? bytes : ConvertOptions{}.memory_budget_bytes;
                    }});
    const auto file_row = [&rows](std::string_view name, std::string_view help, std::string WriteSettings::*field) {
        rows.push_back(text_row(write_row(name, OptionKind::text, help, front_cli), field));
    };
    file_row("decrypt_key_file", "a file holding the raw 32-byte key to decrypt the source with",
             &WriteSettings::decrypt_key_file);
    file_row("decrypt_passphrase_file", "a file holding the passphrase to decrypt the source with",
             &WriteSettings::decrypt_passphrase_file);
    file_row("encrypt_key_file", "a file holding the raw 32-byte key to encrypt a tensorizer target with",
             &WriteSettings::encrypt_key_file);
    file_row("encrypt_passphrase_file", "a file holding the passphrase to encrypt a tensorizer target with",
             &WriteSettings::encrypt_passphrase_file);
    rows.push_back(text_row(
        write_row("sign_key", OptionKind::text,
                  "sign the target with this PEM ECDSA private key (OpenSSF Model Signing, "
                  "from the SHA-256 computed while writing)"),
        [](auto& s) -> auto& { return s.convert.sign_key_file; }));
    rows.push_back(text_row(
        write_row("signature", OptionKind::text,
                  "with sign_key: where the signature goes (default: the target + .sig)"),
        [](auto& s) -> auto& { return s.convert.signature_file; }));
    const WriteSettings defaults;
    for (WriteRow& each : rows) {
        each.row.default_text = each.get(defaults);
    }
    return rows;
}

const std::vector<WriteRow>& write_rows() {
    static const std::vector<WriteRow> rows = make_rows();
    return rows;
}

const WriteRow* write_row_named(std::string_view name) {
    for (const WriteRow& each : write_rows()) {
        if (each.row.name == name) {
            return &each;
        }
    }
    return nullptr;
}

// One side's key or passphrase file (both given fails, naming the two options).
template <class Params>
Result<std::optional<Params>> secret_from(const std::string& key_file, const std::string& passphrase_file,
                                          std::string_view side) {
    if (!key_file.empty() && !passphrase_file.empty()) {
        return fail(errc::invalid_argument,
                    "give " + std::string(side) + "_key_file or " + std::string(side) + "_passphrase_file, not both");
    }
    if (!key_file.empty()) {
        RL_TRY(params, Params::from_key_file(key_file));
        return std::optional<Params>(std::move(params));
    }
    if (!passphrase_file.empty()) {
        RL_TRY(params, Params::from_passphrase_file(passphrase_file));
        return std::optional<Params>(std::move(params));
    }
    return std::optional<Params>();
}

} // namespace

const std::vector<OptionRow>& write_option_table() {
    static const std::vector<OptionRow> table = [] {
        std::vector<OptionRow> made;
        for (const WriteRow& each : write_rows()) {
            made.push_back(each.row);
        }
        return made;
    }();
    return table;
}

const OptionRow* write_option_named(std::string_view name) {
    const WriteRow* row = write_row_named(name);
    return row != nullptr ? &row->row : nullptr;
}

Result<void> set_write_option(WriteSettings& settings, std::string_view name, std::string_view value,
                              std::uint8_t front) {
    const WriteRow* row = write_row_named(name);
    if (row == nullptr || (row->row.fronts & front) == 0) {
        std::vector<std::string> known;
        for (const OptionRow& each : write_option_table()) {
            if ((each.fronts & front) != 0) {
                known.emplace_back(each.name);
            }
        }
        return unknown_option(name, known);
    }
    RL_TRY(text, checked_option_text(row->row, value));
    row->set(settings, text);
    return {};
}

Result<void> finish_write_settings(WriteSettings& settings) {
    RL_TRY(encryption,
           secret_from<EncryptionParams>(settings.encrypt_key_file, settings.encrypt_passphrase_file, "encrypt"));
    if (encryption) {
        settings.convert.encryption = std::move(*encryption);
    }
    RL_TRY(decryption,
           secret_from<DecryptionParams>(settings.decrypt_key_file, settings.decrypt_passphrase_file, "decrypt"));
    if (decryption) {
        settings.decryption = std::move(*decryption);
    }
    return {};
}

} // namespace ringload
