// bindings/python/src/model_load_binding.cpp
//
// _ringload.load_model: the engine's model-level call (ringload/model_load.hpp) for
// ringload.load_folder, its settings the option table's Python rows (ringload/options.hpp):
// the weight files found, read side by side, a signature verified in the same read, the first
// failure reported. The GIL is released for the load.
#include "binding.hpp"

#include "ringload/model_load.hpp"
#include "ringload/options.hpp"

#include <nanobind/stl/string.h>

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

namespace {

nb::list load(const std::string& model, const nb::kwargs& given) {
    const LoadSettings settings = python_settings(given);
    ModelLoadOptions options;
    options.load = settings.load;
    if (!settings.signature.signature_file.empty()) {
        options.signature = settings.signature;
    }
    const OpenOptions open = settings.open;
    options.open = [open](const std::string& path) { return Deserializer::open(path, open); };
    Result<ModelLoaded> loaded = fail(errc::invalid_argument, "not loaded");
    {
        nb::gil_scoped_release released;
        loaded = load_model(model, options);
    }
    nb::list files;
    for (FileLoaded& file : value_or_throw(std::move(loaded)).files) {
        files.append(nb::make_tuple(file.path, loaded_object(std::move(file.model))));
    }
    return files;
}

} // namespace

void bind_model_load(nb::module_& m) {
    m.def("load_model", &load, nb::arg("model"), nb::arg("options"),
          "ringload/model_load.hpp's load_model of `model` (a folder or one file) with the option table's Python "
          "rows as keyword arguments: [(path, Loaded)] in find_weight_files' order");
}

} // namespace ringload::python
