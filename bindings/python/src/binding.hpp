// bindings/python/src/binding.hpp
//
// What the binding's files share: engine failures as one C++ exception (turned into the
// ringload.errors class for its category by errors_binding.cpp), and the registration
// functions module.cpp calls.
#pragma once

#include "ringload/crypto_params.hpp"
#include "ringload/error.hpp"
#include "ringload/ringload.hpp"
#include "ringload/serializer.hpp"

#include <nanobind/nanobind.h>

#include <cstdint>
#include <optional>

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace ringload {
struct LoadSettings;     // ringload/options.hpp
struct ModelLoadOptions; // ringload/model_load.hpp
} // namespace ringload

namespace ringload::python {

namespace nb = nanobind;

// An engine Error on its way to Python.
class EngineFailure : public std::runtime_error {
public:
    explicit EngineFailure(Error error) : std::runtime_error(error.message()), code(error.code) {}
    errc code;
};

// The value of a Result, or the failure thrown (after the GIL is back).
template <class T>
T value_or_throw(Result<T> result) {
    if (!result) {
        throw EngineFailure(result.error());
    }
    return std::move(*result);
}
inline void value_or_throw(Result<void> result) {
    if (!result) {
        throw EngineFailure(result.error());
    }
}

// What a write did, in its summary dict: file_bytes, data_version, seconds, and its signature
// (WriteOptions::sign_key_file): "signature" (where) and "sha256" (what was signed), when it
// signed (serializer_binding.cpp). A write's and a convert's summaries both hold these.
void add_written(nb::dict& out, const WriteSummary& written);

// A writer's encryption from the binding's key= (raw bytes) or passphrase= (Argon2id at this
// cost, with salt= or a random salt), or none.
std::optional<EncryptionParams> encryption_params(const std::optional<nb::bytes>& key,
                                                  const std::optional<std::string>& passphrase, std::uint64_t opslimit,
                                                  std::uint64_t memlimit, const std::optional<nb::bytes>& salt);

// The read settings every load of the binding takes (load, load_slices, stream): device, hash
// checks, the dtype by torch's name (ValueError for an unknown one), the ring and the workers.
LoadOptions engine_load_options(const std::string& device, bool verify, const std::optional<std::string>& dtype,
                                std::size_t slot_size, std::uint32_t slot_count, std::size_t threads);

// A Python progress callable (progress(bytes_done, bytes_total, tensors_done, tensors_total))
// driven from the engine's threads while the GIL is released: called with the GIL held. An
// exception it raises cancels the run through `cancel`; rethrow_if_raised() raises it again
// once the run is back (with the GIL held).
class PythonProgress {
public:
    PythonProgress(nb::object callable, CancelToken& cancel) : callable_(std::move(callable)), cancel_(cancel) {}

    // Empty when the callable is None.
    ProgressCallback callback() {
        if (callable_.is_none()) {
            return {};
        }
        return [this](const Progress& step) {
            nb::gil_scoped_acquire acquired;
            if (raised_) {
                return;
            }
            try {
                callable_(step.bytes_done, step.bytes_total, step.tensors_done, step.tensors_total);
            } catch (nb::python_error& error) {
                raised_.emplace(std::move(error));
                cancel_.cancel();
            }
        };
    }

    void rethrow_if_raised() {
        if (raised_) {
            throw std::move(*raised_);
        }
    }

private:
    nb::object callable_;
    CancelToken& cancel_;
    std::optional<nb::python_error> raised_;
};

void bind_errors(nb::module_& m);
void bind_deserializer(nb::module_& m);
void bind_serializer(nb::module_& m);
void bind_stream(nb::module_& m);  // stream_binding.cpp
void bind_facts(nb::module_& m);   // facts_binding.cpp
void bind_signing(nb::module_& m); // signing_binding.cpp

// A file of a signed model (SignedModel::file), as Python holds it.
struct PySignedFile {
    std::shared_ptr<const SignedFile> file;
};
// Keyword arguments that are rows of the option table (ringload/options.hpp), set on `open` and
// `load` (facts_binding.cpp); a wrong name or value raises ValueError naming it.
void apply_options(const nb::kwargs& given, OpenOptions& open, LoadOptions& load);
// Option `name` of the table from a Python value, checked as _ringload.check_option checks the
// Python entry points' keywords (a list row: each of its values); ValueError with its words.
void set_python_option(LoadSettings& settings, const std::string& name, nb::handle value);

// A load's tensors as _ringload.Loaded (deserializer_binding.cpp), tensor k the model's k-th.
nb::object loaded_object(LoadedModel model);

// Keyword arguments as the option table takes them from Python (set_python_option each), then
// finish_settings; ValueError with the table's words (model_load_binding.cpp).
LoadSettings python_settings(const nb::kwargs& given);

// A tensor's index row as tensor_rows() gives it (deserializer_binding.cpp): (index, name,
// path, dtype, shape, byte_length, data_length, is_meta, module_index, tensor_type, data_offset).
nb::tuple tensor_tuple(const TensorInfo& info, std::size_t index);

// A model-level load's options (ringload/model_load.hpp) from the option table's Python rows
// (python_settings), a tensorizer key or passphrase as the package's DecryptionParams gives
// them: what _ringload.load_model and _ringload.stream_model both take (model_load_binding.cpp).
ModelLoadOptions model_load_options(const nb::kwargs& given, const std::optional<nb::bytes>& key = std::nullopt,
                                    const std::optional<std::string>& passphrase = std::nullopt);
// A model as Python gives it: a folder or one file (str), or a list of files or URIs.
using ModelGiven = std::variant<std::string, std::vector<std::string>>;
ModelGiven model_given(nb::handle model);

void bind_model_load(nb::module_& m);   // model_load_binding.cpp
void bind_model_stream(nb::module_& m); // model_stream_binding.cpp

} // namespace ringload::python
