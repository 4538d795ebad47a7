// bindings/python/src/model_load_binding.cpp
//
// _ringload.load_model: the engine's model-level call (ringload/model_load.hpp) for
// ringload.load_folder, its settings the option table's Python rows (ringload/options.hpp):
// the weight files found, read side by side, a signature verified in the same read, the first
// failure reported. The GIL is released for the load.
#include "binding.hpp"

#include "ringload/model_load.hpp"
#include "ringload/options.hpp"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace ringload::python {

LoadSettings python_settings(const nb::kwargs& given) {
    LoadSettings settings;
    for (auto [key, value] : given) {
        if (!value.is_none()) {
            set_python_option(settings, nb::cast<std::string>(key), value);
        }
    }
    if (auto finished = finish_settings(settings); !finished) {
        throw nb::value_error(finished.error().message().c_str());
    }
    return settings;
}

ModelLoadOptions model_load_options(const nb::kwargs& given, const std::optional<nb::bytes>& key,
                                    const std::optional<std::string>& passphrase) {
    const LoadSettings settings = python_settings(given);
    ModelLoadOptions options;
    options.load = settings.load;
    if (!settings.signature.signature_file.empty()) {
        options.signature = settings.signature;
        options.model_folder = settings.model_folder;
    }
    OpenOptions open = settings.open;
    if (key) {
        open.decryption =
            value_or_throw(DecryptionParams::from_key({reinterpret_cast<const std::byte*>(key->c_str()), key->size()}));
    } else if (passphrase) {
        open.decryption = value_or_throw(DecryptionParams::from_passphrase(*passphrase));
    }
    options.open = [open](const std::string& path) { return Deserializer::open(path, open); };
    return options;
}

ModelGiven model_given(nb::handle model) {
    if (nb::isinstance<nb::str>(model)) {
        return nb::cast<std::string>(model);
    }
    return nb::cast<std::vector<std::string>>(model);
}

namespace {

nb::list load(nb::handle model, const std::optional<nb::bytes>& key, const std::optional<std::string>& passphrase,
              const nb::kwargs& given) {
    const ModelGiven what = model_given(model);
    const ModelLoadOptions options = model_load_options(given, key, passphrase);
    Result<ModelLoaded> loaded = fail(errc::invalid_argument, "not loaded");
    {
        nb::gil_scoped_release released;
        loaded = std::visit([&options](const auto& files) { return load_model(files, options); }, what);
    }
    nb::list files;
    for (FileLoaded& file : value_or_throw(std::move(loaded)).files) {
        files.append(nb::make_tuple(file.path, loaded_object(std::move(file.model))));
    }
    return files;
}

} // namespace

void bind_model_load(nb::module_& m) {
    m.def("load_model", &load, nb::arg("model"), nb::arg("key").none() = nb::none(),
          nb::arg("passphrase").none() = nb::none(), nb::arg("options"),
          "ringload/model_load.hpp's load_model of `model` (a folder or one file, or a list of files or URIs in "
          "order) with the option table's Python rows as keyword arguments: [(path, Loaded)] in the files' order");
}

} // namespace ringload::python
