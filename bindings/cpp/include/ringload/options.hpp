// ringload/options.hpp
//
// The settings a user gives by name, in one table: every front end's names come from it (the
// CLI's --flags, Python's keyword arguments, the vLLM/SGLang extra config, the README's list),
// with the default taken from the structs they fill, so that an option is one row here and
// nothing in the front ends: the network and cache, the ring and threads, device and dtype,
// verification, keys, the model signature, and the server loaders' own words. Registered
// sources add their own rows (SourceKind::options): a new source's settings appear everywhere
// without code. An unknown or mistyped option fails with the same words in every front end.
//
//     LoadSettings settings;
//     RL_TRY_VOID(set_option(settings, "connections", "16"));
//     RL_TRY_VOID(set_option(settings, "gcs_endpoint", "http://127.0.0.1:4443"));
//     RL_TRY_VOID(set_option(settings, "signature", "model.sig"));
//     RL_TRY_VOID(finish_settings(settings)); // keys read, the ring sized, the signature's words checked
#pragma once

#include "ringload/error.hpp"
#include "ringload/model_signing.hpp"
#include "ringload/ringload.hpp"

#include <cstdint>
#include <map>
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
    integer, // a whole number, 0 for the default
    list,    // texts (paths): the CLI's flag repeats, Python takes a list or one text
};

// The front ends that take a row, a bit each: the `ringload` CLI, the Python API's entry points
// (load_file, safe_open, stream_tensors, TensorDeserializer, ...) and the server loaders' extra
// config (vLLM's and SGLang's --model-loader-extra-config).
enum Front : std::uint8_t {
    front_cli = 1,
    front_python = 2,
    front_server = 4,
    front_all = front_cli | front_python | front_server,
};

// What a row sets: where set_option stores it.
enum class OptionTarget : std::uint8_t {
    open,      // OpenOptions (opening the file or URL)
    load,      // LoadOptions (each load)
    keys,      // a key or passphrase file, read by finish_settings into OpenOptions::decryption
    signature, // SignatureCheck and the signed model's folder
    front_end, // a front end's own setting (a server loader's read_once, ...), kept as checked text
    write,     // a write's (convert's): WriteSettings, in write_option_table()
};

struct OptionRow {
    std::string_view name; // snake_case; the CLI's flag is --name-with-dashes
    OptionKind kind = OptionKind::text;
    std::vector<std::string_view> choices; // OptionKind::choice
    std::string_view help;                 // one line
    std::string default_text;              // as a user would write it ("8", "auto", "false"; "" for none)
    bool per_load = false;                 // a LoadOptions field (else OpenOptions)
    std::string_view source;               // the registered source whose option it is ("s3"), else ""
    std::uint8_t fronts = front_all;       // Front bits: who takes it
    OptionTarget target = OptionTarget::open;
    std::string_view cli_flag; // the CLI's flag where it is not --name-with-dashes ("--verify")
};

// Everything a load takes by name, filled by set_option. finish_settings then reads the key
// files, sizes the ring and checks the signature's words together.
struct LoadSettings {
    OpenOptions open;
    LoadOptions load;
    SignatureCheck signature;   // signature_file empty: an unsigned load
    std::string model_folder;   // a signed load's model folder ("": the weight files' own)
    std::size_t ring_bytes = 0; // the ring's bytes: load.slot_count from it and the slot size
    std::string key_file;
    std::string passphrase_file;
    // front_end rows and registered sources' rows as given, checked: name -> text ("true").
    std::map<std::string, std::string, std::less<>> given;
};

// The shared rows, then each registered source's, in registry order.
const std::vector<OptionRow>& option_table();

// The row called `name`, or null.
const OptionRow* option_named(std::string_view name);

// The refusal of an unknown option, one sentence for every front end: "unknown option 'NAME';
// the options are A, B, ..." (`known`: what that front end takes, as it spells them).
Error unknown_option(std::string_view name, const std::vector<std::string>& known);

// The text of option `name` in `settings`, as set_option takes it ("mapped", "8", "true");
// "" for a name the table does not hold.
std::string option_value(const LoadSettings& settings, std::string_view name);

// The CLI's flag of `row`: its cli_flag, else --name-with-dashes.
std::string cli_flag_of(const OptionRow& row);

// What a value of `row` must be, in the words of its refusal: "a positive integer", "one of
// auto, arena, mapped", "true or false", ...
std::string what_option_takes(const OptionRow& row);

// Checks `value` against `row` and gives it as set_option stores it (flags "true"/"false").
// A value of the wrong kind fails naming the option and what it must be.
Result<std::string> checked_option_text(const OptionRow& row, std::string_view value);

// Sets option `name` from its text, among the rows that `front` (Front bits) takes. An unknown
// name fails listing the options that front end takes; a value of the wrong kind fails naming
// the option and what it must be. A list row's values add up (one call per value).
Result<void> set_option(LoadSettings& settings, std::string_view name, std::string_view value,
                        std::uint8_t front = front_all);

// After the last set_option: reads key_file / passphrase_file into open.decryption (both given
// fails), sizes load.slot_count from ring_bytes, and checks the signature's words together
// (whom to trust given once; identity and identity_issuer with trust_root; none of them
// without signature). Each failure names the options.
Result<void> finish_settings(LoadSettings& settings);

// The ring's slot count for ring_bytes of slots of slot_size_bytes (0: the files' 4 MiB): at
// least one. finish_settings and Python's TensorDeserializer(ring_bytes=) both size with it.
std::uint32_t slots_for_ring(std::size_t ring_bytes, std::size_t slot_size_bytes);

// Everything a write takes by name (`ringload convert`, Python's convert, vllm_convert), filled
// by set_write_option from write_option_table(): a table of its own, since its words mean other
// things there (signature: where the write's signature goes; verify_hash: the source's hashes,
// checked unless turned off). finish_write_settings then reads the key and passphrase files.
struct WriteSettings {
    ConvertOptions convert;                     // format, verify_hashes, memory budget, signing, encryption
    std::optional<DecryptionParams> decryption; // the source's
    std::string encrypt_key_file;
    std::string encrypt_passphrase_file;
    std::string decrypt_key_file;
    std::string decrypt_passphrase_file;
};

// A write's rows (target OptionTarget::write), in the order the README lists them.
const std::vector<OptionRow>& write_option_table();
const OptionRow* write_option_named(std::string_view name);

// As set_option, for a write's rows: an unknown name fails listing the write options `front`
// takes, a value of the wrong kind names the option and what it must be.
Result<void> set_write_option(WriteSettings& settings, std::string_view name, std::string_view value,
                              std::uint8_t front = front_all);

// After the last set_write_option: reads the encrypt_ and decrypt_ key or passphrase files
// (ringload/crypto_params.hpp's rule; a key file and a passphrase file for one side fails).
Result<void> finish_write_settings(WriteSettings& settings);

// The open and load rows only, as before LoadSettings (the engine's rows, any front end).
Result<void> set_option(OpenOptions& open, LoadOptions& load, std::string_view name, std::string_view value);

} // namespace ringload
