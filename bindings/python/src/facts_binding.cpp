// bindings/python/src/facts_binding.cpp
//
// What the engine knows that the Python package asks instead of restating: the option table,
// the registered sources and which one takes a URI, the dtypes (sizes, which ones a load
// converts), how a device is spelled. One rule, one place (issue #39).
#include "binding.hpp"

#include "formats/registry.hpp"
#include "formats/safetensors/dtype_names.hpp"
#include "gpu/device_name.hpp"
#include "ringload/crypto_params.hpp"
#include "ringload/dtype.hpp"
#include "ringload/engine/dtype_convert.hpp"
#include "ringload/engine/secretbox.hpp"
#include "ringload/io/source_registry.hpp"
#include "ringload/model_load.hpp"
#include "ringload/options.hpp"
#include "ringload/placement.hpp"
#include "ringload/share_plan.hpp"

#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

namespace ringload::python {
namespace {

const char* kind_word(OptionKind kind) {
    switch (kind) {
        case OptionKind::count:
            return "count";
        case OptionKind::bytes:
            return "bytes";
        case OptionKind::seconds:
            return "seconds";
        case OptionKind::choice:
            return "choice";
        case OptionKind::text:
            return "text";
        case OptionKind::flag:
            return "flag";
        case OptionKind::integer:
            return "integer";
        case OptionKind::list:
            return "list";
    }
    return "text";
}

const char* target_word(OptionTarget target) {
    switch (target) {
        case OptionTarget::open:
            return "open";
        case OptionTarget::load:
            return "load";
        case OptionTarget::keys:
            return "keys";
        case OptionTarget::signature:
            return "signature";
        case OptionTarget::front_end:
            return "front_end";
        case OptionTarget::write:
            return "write";
    }
    return "open";
}

nb::list front_words(std::uint8_t fronts) {
    nb::list words;
    for (const auto& [bit, word] : {std::pair{front_cli, "cli"}, {front_python, "python"}, {front_server, "server"}}) {
        if ((fronts & bit) != 0) {
            words.append(word);
        }
    }
    return words;
}

std::uint8_t front_of(const std::string& word) {
    if (word == "cli") {
        return front_cli;
    }
    if (word == "python") {
        return front_python;
    }
    if (word == "server") {
        return front_server;
    }
    throw nb::value_error(("front must be cli, python or server, not " + word).c_str());
}

nb::list rows_of(const std::vector<OptionRow>& table) {
    nb::list rows;
    for (const OptionRow& row : table) {
        nb::dict entry;
        entry["name"] = std::string(row.name);
        entry["kind"] = kind_word(row.kind);
        nb::list choices;
        for (std::string_view choice : row.choices) {
            choices.append(std::string(choice));
        }
        entry["choices"] = choices;
        entry["help"] = std::string(row.help);
        entry["default"] = row.default_text;
        entry["per_load"] = row.per_load;
        entry["source"] = std::string(row.source);
        entry["fronts"] = front_words(row.fronts);
        entry["target"] = target_word(row.target);
        entry["cli_flag"] = cli_flag_of(row);
        rows.append(entry);
    }
    return rows;
}

nb::list source_rows() {
    nb::list rows;
    for (const SourceKind* kind : registered_sources()) {
        nb::dict entry;
        entry["name"] = std::string(kind->name);
        entry["uri_forms"] = std::string(kind->uri_forms);
        entry["writes"] = kind->publish != nullptr;
        entry["writes_any_format"] = kind->publish != nullptr && kind->publishes_any_file;
        rows.append(entry);
    }
    return rows;
}

nb::object source_of(const std::string& uri) {
    const SourceKind* kind = source_for(uri);
    return kind == nullptr ? nb::none() : nb::object(nb::str(std::string(kind->name).c_str()));
}

// The registered formats and what the package asks of them.
nb::list format_rows() {
    nb::list rows;
    for (const Format* format : formats::registered()) {
        nb::dict entry;
        entry["name"] = std::string(format->name);
        nb::list extensions;
        for (std::string_view extension : format->extensions) {
            extensions.append(std::string(extension));
        }
        entry["extensions"] = extensions;
        entry["tensors_mappable"] = format->tensors_mappable;
        entry["may_be_encrypted"] = format->may_be_encrypted;
        entry["keys_records"] = format->keys_records;
        entry["tensors_view_storages"] = format->tensors_view_storages;
        rows.append(entry);
    }
    return rows;
}

// The local file `uri` names, or None when a registered source reads it; an unknown scheme://
// raises (no source takes it, and it is no path).
nb::object local_path(const std::string& uri) {
    if (source_for(uri) != nullptr) {
        return nb::none();
    }
    return nb::str(value_or_throw(local_path_of(uri)).c_str());
}

// name -> (itemsize, converts, safetensors' name): every dtype the engine reads, whether a
// load's dtype= converts it (floating types) or leaves it as stored, and how safetensors spells
// it (None where safetensors cannot store it).
nb::dict dtype_rows() {
    nb::dict rows;
    for (int value = 0; value <= static_cast<int>(DType::float4_e2m1fn_x2); ++value) {
        const auto dtype = static_cast<DType>(value);
        const auto spelled = safetensors::safetensors_name(dtype);
        nb::object safetensors_spelling = spelled ? nb::object(nb::str(std::string(*spelled).c_str())) : nb::none();
        rows[nb::str(std::string(torch_name(dtype)).c_str())] =
            nb::make_tuple(itemsize(dtype), is_convertible_float(dtype), safetensors_spelling);
    }
    return rows;
}

// "cpu" or "cuda:N" from what users write: "cuda", "cuda:1", 1 (an index), "cpu".
std::string device_text(nb::handle device) {
    if (nb::isinstance<nb::int_>(device) && !nb::isinstance<nb::bool_>(device)) {
        return "cuda:" + std::to_string(nb::cast<int>(device));
    }
    const std::string text = nb::cast<std::string>(nb::str(device));
    const int ordinal = value_or_throw(gpu::parse_device(text));
    return ordinal == gpu::cpu_ordinal ? "cpu" : "cuda:" + std::to_string(ordinal);
}

} // namespace

namespace {

// The keyword arguments of Deserializer(): rows of the option table (ringload/options.hpp),
// each value as the text set_option takes. None leaves an option at its default.
std::string option_text(const std::string& name, nb::handle value) {
    if (nb::isinstance<nb::bool_>(value)) {
        return nb::cast<bool>(value) ? "true" : "false";
    }
    if (nb::isinstance<nb::int_>(value) || nb::isinstance<nb::float_>(value) || nb::isinstance<nb::str>(value)) {
        return nb::cast<std::string>(nb::str(value));
    }
    throw nb::type_error(("option " + name + " must be a number, text or a bool, not " +
                          nb::cast<std::string>(nb::str(value.type().attr("__name__"))))
                             .c_str());
}

} // namespace

void apply_options(const nb::kwargs& given, OpenOptions& open, LoadOptions& load) {
    LoadSettings settings;
    settings.open = std::move(open);
    for (auto [key, value] : given) {
        const std::string name = nb::cast<std::string>(key);
        if (value.is_none()) {
            continue;
        }
        // Deserializer() opens: it takes the rows of opening and the placement of its loads
        // (the entry points take the other load rows as keywords of their own).
        const OptionRow* row = option_named(name);
        if (row != nullptr && row->target != OptionTarget::open && row->name != "placement") {
            throw nb::value_error(("option " + name + " is a load's, not taken when opening a file").c_str());
        }
        auto applied = set_option(settings, name, option_text(name, value), front_python);
        if (!applied) {
            throw nb::value_error(applied.error().message().c_str());
        }
    }
    open = std::move(settings.open);
    load.placement = settings.load.placement;
}

// The engine's words for a value of the wrong kind (option_table.cpp's checked_option_text).
[[noreturn]] void throw_wrong_kind(const std::string& name, const std::string& wanted, nb::handle value) {
    throw nb::value_error(fail(errc::invalid_argument, "option " + name + " must be " + wanted + ", not '" +
                                                           nb::cast<std::string>(nb::str(value)) + "'")
                              .message()
                              .c_str());
}

std::string checked_or_raise(const OptionRow& row, const std::string& text) {
    auto checked = checked_option_text(row, text);
    if (!checked) {
        throw nb::value_error(checked.error().message().c_str());
    }
    return std::move(*checked);
}

// Whether a Python value is of the row's kind before its text is checked: numbers as numbers
// (not "8", not True), flags as bools, choices and texts as text (a path as os.PathLike too).
bool python_kind_fits(const OptionRow& row, nb::handle value) {
    const bool boolean = nb::isinstance<nb::bool_>(value);
    const bool text = nb::isinstance<nb::str>(value) || nb::hasattr(value, "__fspath__");
    switch (row.kind) {
        case OptionKind::flag:
            return boolean;
        case OptionKind::count:
        case OptionKind::bytes:
        case OptionKind::integer:
            return nb::isinstance<nb::int_>(value) && !boolean;
        case OptionKind::seconds:
            return (nb::isinstance<nb::int_>(value) || nb::isinstance<nb::float_>(value)) && !boolean;
        case OptionKind::choice:
            return nb::isinstance<nb::str>(value);
        case OptionKind::text:
        case OptionKind::list:
            return text && !nb::cast<std::string>(nb::str(nb::module_::import_("os").attr("fspath")(value))).empty();
    }
    return false;
}

// `value` checked against option `name` of the table as `front` takes it, and given back as
// Python holds it: a flag as a bool, a number as an int or float, a list row as a list of
// texts (one text or several), else text. ValueError with the table's words otherwise.
nb::object checked_python_value(const OptionRow* row, const std::string& name, nb::handle value);

// A checked text as Python holds it: a flag as a bool, a number as an int or float, else text.
nb::object python_value_of(const OptionRow& row, const std::string& text) {
    switch (row.kind) {
        case OptionKind::flag:
            return nb::bool_(text == "true");
        case OptionKind::seconds:
            return nb::float_(std::stod(text));
        case OptionKind::count:
        case OptionKind::bytes:
        case OptionKind::integer:
            return nb::int_(std::stoull(text)); // (whole numbers: kind_text let no sign through)
        default:
            return nb::str(text.c_str());
    }
}

// `value` checked against `row` (the row named `name` of a table, nullptr when it has none)
// as `front` takes it; a missing row, or one of another front, is refused by `set` (the
// table's setter) in the table's words, every known name listed. A command line's text (the
// "cli" front: vllm_convert's flags) is checked as the CLI checks it.
template <class Settings, class SetOption>
nb::object check_in_table(const OptionRow* row, const std::string& name, nb::handle value, const std::string& front,
                          SetOption set) {
    const std::uint8_t bit = front_of(front);
    if (row == nullptr || (row->fronts & bit) == 0) {
        Settings scratch;
        throw nb::value_error(set(scratch, name, "", bit).error().message().c_str());
    }
    if (bit == front_cli) {
        return python_value_of(*row, checked_or_raise(*row, nb::cast<std::string>(nb::str(value))));
    }
    return checked_python_value(row, name, value);
}

nb::object check_option(const std::string& name, nb::handle value, const std::string& front) {
    return check_in_table<LoadSettings>(option_named(name), name, value, front,
                                        [](LoadSettings& settings, const std::string& n, const char* text,
                                           std::uint8_t bit) { return set_option(settings, n, text, bit); });
}

// As check_option, for a write's rows (write_option_table: Python's convert, vllm_convert).
nb::object check_write_option(const std::string& name, nb::handle value, const std::string& front) {
    return check_in_table<WriteSettings>(write_option_named(name), name, value, front,
                                         [](WriteSettings& settings, const std::string& n, const char* text,
                                            std::uint8_t bit) { return set_write_option(settings, n, text, bit); });
}

// `value` of `row` as Python holds it once checked (check_option's second half).
nb::object checked_python_value(const OptionRow* row, const std::string& name, nb::handle value) {
    if (row->kind == OptionKind::list && !nb::isinstance<nb::str>(value) && nb::hasattr(value, "__iter__") &&
        !nb::hasattr(value, "__fspath__")) {
        nb::list texts;
        for (nb::handle each : value) {
            if (!python_kind_fits(*row, each)) {
                throw_wrong_kind(name, what_option_takes(*row), value);
            }
            texts.append(nb::module_::import_("os").attr("fspath")(each));
        }
        if (texts.size() == 0) {
            throw_wrong_kind(name, what_option_takes(*row), value);
        }
        return texts;
    }
    if (!python_kind_fits(*row, value)) {
        throw_wrong_kind(name, what_option_takes(*row), value);
    }
    if (row->kind == OptionKind::text || row->kind == OptionKind::list) {
        nb::object text = nb::module_::import_("os").attr("fspath")(value);
        checked_or_raise(*row, nb::cast<std::string>(text));
        return row->kind == OptionKind::list ? nb::object(nb::list(nb::make_tuple(text))) : text;
    }
    return python_value_of(*row, checked_or_raise(*row, option_text(name, value)));
}

void set_python_option(LoadSettings& settings, const std::string& name, nb::handle value) {
    nb::object checked = check_option(name, value, "python");
    const bool several = nb::isinstance<nb::list>(checked);
    for (nb::handle each : several ? nb::list(checked) : nb::list(nb::make_tuple(checked))) {
        if (auto set = set_option(settings, name, option_text(name, each), front_python); !set) {
            throw nb::value_error(set.error().message().c_str());
        }
    }
}

// A placement ask from Python's words: the use ("handed_over" or "into_parameters").
PlacementAsk placement_ask(const std::string& uri, const std::string& device, const std::string& use, bool verify,
                           bool encrypted, bool signed_file) {
    if (use != "handed_over" && use != "into_parameters") {
        throw nb::value_error(("use must be handed_over or into_parameters, not " + use).c_str());
    }
    PlacementAsk ask;
    ask.uri = uri;
    ask.device = device;
    ask.use = use == "into_parameters" ? PlacementUse::into_parameters : PlacementUse::handed_over;
    ask.verify_hashes = verify;
    ask.encrypted = encrypted;
    ask.signed_file = signed_file;
    return ask;
}

Placement placement_of(const std::string& word) {
    LoadSettings scratch; // the option table's words and its refusal
    if (auto set = set_option(scratch, "placement", word); !set) {
        throw nb::value_error(set.error().message().c_str());
    }
    return scratch.load.placement;
}

void bind_placement(nb::module_& m) {
    m.def(
        "choose_placement",
        [](const std::string& asked, const std::string& uri, const std::string& device, const std::string& use,
           bool verify, bool encrypted, bool signed_file) {
            LoadSettings chosen; // the option table's word for the placement chosen
            chosen.load.placement =
                choose_placement(placement_of(asked), placement_ask(uri, device, use, verify, encrypted, signed_file));
            return option_value(chosen, "placement");
        },
        nb::arg("asked"), nb::arg("uri"), nb::arg("device") = "cpu", nb::arg("use") = "handed_over",
        nb::arg("verify") = false, nb::arg("encrypted") = false, nb::arg("signed") = false,
        "ringload/placement.hpp's choose_placement: `asked`, or for \"auto\" \"mapped\" where the file may stay in "
        "its pages and the page cache holds it (into parameters: on one CPU or less), else \"auto\"");
    m.def(
        "why_not_mappable",
        [](const std::string& uri, const std::string& device, bool verify, bool encrypted, bool signed_file) {
            return why_not_mappable(placement_ask(uri, device, "handed_over", verify, encrypted, signed_file));
        },
        nb::arg("uri"), nb::arg("device") = "cpu", nb::arg("verify") = false, nb::arg("encrypted") = false,
        nb::arg("signed") = false,
        "Why the file's tensors cannot stay in its pages (ringload/placement.hpp), or None when they may");
    m.def("cpus_available", &cpus_available,
          "The CPUs this process may use: its affinity, or fewer where its cgroup's CPU quota allows less");
}

using GroupCheckpoint = std::vector<std::tuple<std::string, std::vector<std::uint64_t>, std::uint64_t>>;
using GroupWants = std::vector<std::pair<std::map<std::string, std::vector<GroupBox>>, std::vector<std::string>>>;

// plan_group_reads (ringload/share_plan.hpp) for _parameter_group.py: the ranks' wants as
// all_gather_object gave them, the plan as (split_by_rows, [(name, reader, ranks)]).
nb::tuple group_reads(const GroupCheckpoint& checkpoint, const GroupWants& wants, bool whole_only) {
    std::vector<GroupTensor> tensors;
    for (const auto& [name, shape, bytes] : checkpoint) {
        tensors.push_back({name, shape, bytes});
    }
    std::vector<RankWants> ranks;
    for (const auto& [boxes, whole] : wants) {
        ranks.push_back({boxes, std::set<std::string>(whole.begin(), whole.end())});
    }
    const GroupReadPlan plan = plan_group_reads(tensors, ranks, whole_only);
    nb::list shared;
    for (const GroupRead& read : plan.shared) {
        shared.append(nb::make_tuple(read.name, read.reader, read.ranks));
    }
    return nb::make_tuple(plan.split_by_rows, shared);
}

// find_weight_files' answer, or ValueError with its sentence (the folder a user named is input).
std::vector<std::string> weight_files(const std::string& folder) {
    auto found = find_weight_files(folder);
    if (!found) {
        throw nb::value_error(found.error().detail.c_str());
    }
    return std::move(*found);
}

// A key or passphrase file read by the engine's rule (ringload/crypto_params.hpp), so that
// Python's from_key_file, vLLM's key_file and the CLI's --key-file take the same files and
// refuse the same ones in the same words.
nb::bytes key_file_bytes(const std::string& path) {
    auto key = value_or_throw(read_key_file(path));
    nb::bytes bytes(key.data(), key.size());
    wipe_secret(key.data(), key.size());
    return bytes;
}

nb::bytes passphrase_file_bytes(const std::string& path) {
    std::string passphrase = value_or_throw(read_passphrase_file(path));
    nb::bytes bytes(passphrase.data(), passphrase.size());
    wipe_secret(passphrase.data(), passphrase.size());
    return bytes;
}

void bind_facts(nb::module_& m) {
    m.def("read_key_file", &key_file_bytes, nb::arg("path"),
          "The 32 bytes of a key file, by the engine's rule (ringload/crypto_params.hpp); errors name the file");
    m.def("read_passphrase_file", &passphrase_file_bytes, nb::arg("path"),
          "A passphrase file's passphrase (one trailing newline dropped; not empty), by the engine's rule");
    m.def(
        "write_option_table", [] { return rows_of(write_option_table()); },
        "A write's rows (ringload/options.hpp's write_option_table), as option_table's: what convert takes");
    m.def("check_write_option", &check_write_option, nb::arg("name"), nb::arg("value").none(), nb::arg("front"),
          "check_option for a write's rows (Python's convert, vllm_convert)");
    m.def(
        "option_table", [] { return rows_of(option_table()); },
        "The option table (ringload/options.hpp): one dict per option (name, kind, choices, help, default, "
        "per_load, source, fronts, target, cli_flag), the shared ones first, then each registered source's");
    m.def("check_option", &check_option, nb::arg("name"), nb::arg("value").none(), nb::arg("front"),
          "`value` checked against the option table's row `name` as `front` (cli, python, server) takes it, given "
          "back as Python holds it (bool, int, float, list of str, str); ValueError with the table's words: an "
          "unknown option lists the ones that front end takes");
    bind_placement(m);
    m.def("plan_group_reads", &group_reads, nb::arg("checkpoint"), nb::arg("wants"), nb::arg("whole_only"),
          "ringload/share_plan.hpp's plan_group_reads: checkpoint [(name, shape, bytes)], wants per rank "
          "({name: [box]}, [whole names]); gives (split_by_rows, [(name, reader, ranks)])");
    m.def("sources", &source_rows, "The registered sources: name, uri_forms, writes, writes_any_format");
    m.def("source_of", &source_of, nb::arg("uri"),
          "The name of the registered source that reads `uri` (\"s3\", \"gcs\", ...), or None for a local path");
    m.def("formats", &format_rows,
          "The registered formats: name, extensions, tensors_mappable, may_be_encrypted, keys_records, "
          "tensors_view_storages");
    m.def(
        "format_for_target", [](const std::string& target) { return std::string(formats::for_target(target).name); },
        nb::arg("target"), "The format a target named `target` is written in (its extension's, else tensorizer)");
    m.def("local_path", &local_path, nb::arg("uri"),
          "The local file `uri` names (file:// taken off), or None when a registered source reads it");
    m.def("dtypes", &dtype_rows,
          "Every dtype the engine reads: name -> (itemsize, converted by a load's dtype=, safetensors' name or None)");
    m.def("find_weight_files", &weight_files, nb::arg("folder"),
          "A model folder's weight files, by the rule `ringload load DIR` uses (ringload/model_load.hpp): the first "
          "layout present (safetensors, tensorizer, .bin, .pt), the shards its index json names; ValueError naming "
          "what is wrong");
    m.def(
        "files_read_at_once",
        [](const std::vector<std::string>& files, bool signed_model, const std::string& device) {
            return files_read_at_once(files, signed_model, device);
        },
        nb::arg("files"), nb::arg("signed_model"), nb::arg("device") = "cpu",
        "How many of `files` a model's load reads at once onto `device` (ringload/model_load.hpp): one per core, "
        "two for a signed model, fewer where host memory, or on a GPU its free memory, is short");
    m.def("slots_for_ring", &slots_for_ring, nb::arg("ring_bytes"), nb::arg("slot_size"),
          "The ring's slot count for ring_bytes of slots of slot_size bytes (0: 4 MiB), at least one "
          "(ringload/options.hpp, as the CLI's --ring-bytes)");
    m.def("slots_per_file", &slots_per_file, nb::arg("files_at_once"), nb::arg("slots_held_until_hashed") = false,
          "Reads in flight for each of files read side by side (ringload/model_load.hpp): a share of 32, at least 4; "
          "32 each where their slots are held until hashed");
    m.def("device_text", &device_text, nb::arg("device"),
          "A device as the engine spells it: \"cpu\" or \"cuda:N\" (\"cuda\" is cuda:0; an int N is cuda:N)");
}

} // namespace ringload::python
