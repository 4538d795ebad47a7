// bindings/python/src/errors_binding.cpp
//
// Engine failures become the ringload.errors class of their category, with the engine's
// message (which names the file or URL and what is wrong). The engine's hints name the CLI's
// flags; a Python user is told the argument of the same meaning instead.
#include "binding.hpp"

#include <array>
#include <string_view>
#include <utility>

namespace ringload::python {
namespace {

// The CLI's words in engine messages, and what a Python caller passes instead.
constexpr std::array<std::pair<std::string_view, std::string_view>, 3> cli_to_python{{
    {"use --key-file or --passphrase-file",
     "pass encryption=DecryptionParams.from_key(key) or DecryptionParams.from_string(passphrase)"},
    {"--ca-file", "ca_file="},
    {"--http-version 1.1", "http_version=\"1.1\""},
}};

std::string in_python_words(std::string message) {
    for (const auto& [cli, python] : cli_to_python) {
        for (auto at = message.find(cli); at != std::string::npos; at = message.find(cli, at + python.size())) {
            message.replace(at, cli.size(), python);
        }
    }
    return message;
}

const char* class_for(errc code) {
    switch (code) {
        case errc::hash_mismatch:
            return "HashMismatchError";
        case errc::signature_invalid:
            return "SignatureError";
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
            const std::string message = in_python_words(error.what());
            PyErr_SetObject(type.ptr(), nb::str(message.data(), message.size()).ptr());
        }
    });
}

} // namespace ringload::python
