// bindings/python/src/errors_binding.cpp
//
// Engine failures become the ringload.errors class of their category, with the engine's
// message (which names the file or URL and what is wrong).
#include "binding.hpp"

namespace ringload::python {
namespace {

const char* class_for(errc code) {
    switch (code) {
        case errc::hash_mismatch:
            return "HashMismatchError";
        case errc::decryption_failed:
        case errc::encrypted_no_key:
        case errc::not_encrypted_key_given:
            return "DecryptionError";
        case errc::truncated:
        case errc::not_tensorizer:
        case errc::unsupported_version:
        case errc::empty_index:
        case errc::invalid_tensor_name:
        case errc::format_error:
            return "FormatError";
        case errc::io_error:
            return "SourceError";
        case errc::not_found:
            return "SourceNotFoundError"; // a SourceError and a FileNotFoundError
        case errc::device_error:
            return "DeviceError";
        case errc::cancelled:
            return "CancelledError";
        case errc::invalid_argument:
        case errc::unsupported:
        case errc::out_of_memory:
            break;
    }
    return code == errc::invalid_argument ? "ArgumentError" : "RingloadError";
}

} // namespace

void bind_errors(nb::module_& m) {
    (void)m;
    nb::register_exception_translator([](const std::exception_ptr& failure, void*) {
        try {
            std::rethrow_exception(failure);
        } catch (const EngineFailure& error) {
            nb::object errors = nb::module_::import_("ringload.errors");
            nb::object type = errors.attr(class_for(error.code));
            PyErr_SetObject(type.ptr(), nb::str(error.what()).ptr());
        }
    });
}

} // namespace ringload::python
