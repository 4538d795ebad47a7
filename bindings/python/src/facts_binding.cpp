// bindings/python/src/facts_binding.cpp
//
// What the engine knows that the Python package asks instead of restating: the option table,
// the registered sources and which one takes a URI, the dtypes (sizes, which ones a load
// converts), how a device is spelled. One rule, one place (issue #39).
#include "binding.hpp"

#include "formats/registry.hpp"
#include "formats/safetensors/dtype_names.hpp"
#include "gpu/device_name.hpp"
#include "ringload/dtype.hpp"
#include "ringload/engine/dtype_convert.hpp"
#include "ringload/io/source_registry.hpp"
#include "ringload/model_load.hpp"
#include "ringload/options.hpp"

#include <nanobind/stl/string.h>
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
    }
    return "text";
}

nb::list option_rows() {
    nb::list rows;
    for (const OptionRow& row : option_table()) {
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
    for (auto [key, value] : given) {
        const std::string name = nb::cast<std::string>(key);
        if (value.is_none()) {
            continue;
        }
        auto applied = set_option(open, load, name, option_text(name, value));
        if (!applied) {
            throw nb::value_error(applied.error().message().c_str());
        }
    }
}

// find_weight_files' answer, or ValueError with its sentence (the folder a user named is input).
std::vector<std::string> weight_files(const std::string& folder) {
    auto found = find_weight_files(folder);
    if (!found) {
        throw nb::value_error(found.error().detail.c_str());
    }
    return std::move(*found);
}

void bind_facts(nb::module_& m) {
    m.def("option_table", &option_rows,
          "The option table (ringload/options.hpp): one dict per option (name, kind, choices, help, default, "
          "per_load, source), the shared ones first, then each registered source's");
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
    m.def("files_read_at_once", &files_read_at_once, nb::arg("files"), nb::arg("signed_model"),
          "How many of `files` a model's load reads at once (ringload/model_load.hpp): one per core, two for a "
          "signed model, fewer where memory is short");
    m.def("device_text", &device_text, nb::arg("device"),
          "A device as the engine spells it: \"cpu\" or \"cuda:N\" (\"cuda\" is cuda:0; an int N is cuda:N)");
}

} // namespace ringload::python
