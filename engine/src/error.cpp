// engine/src/error.cpp
#include "ringload/error.hpp"

#include "ringload/printable.hpp"

#include <cstdio>
#include <cstdlib>

namespace ringload {

std::string_view errc_name(errc code) noexcept {
    switch (code) {
        case errc::truncated:
            return "truncated";
        case errc::hash_mismatch:
            return "hash mismatch";
        case errc::decryption_failed:
            return "decryption failed";
        case errc::not_tensorizer:
            return "not a tensorizer file";
        case errc::unsupported_version:
            return "unsupported version";
        case errc::encrypted_no_key:
            return "encrypted but no key";
        case errc::not_encrypted_key_given:
            return "not encrypted but key given";
        case errc::empty_index:
            return "empty index";
        case errc::invalid_tensor_name:
            return "invalid tensor name";
        case errc::format_error:
            return "format error";
        case errc::io_error:
            return "I/O error";
        case errc::not_found:
            return "not found";
        case errc::signature_invalid:
            return "signature invalid";
        case errc::invalid_argument:
            return "invalid argument";
        case errc::unsupported:
            return "unsupported";
        case errc::cancelled:
            return "cancelled";
        case errc::out_of_memory:
            return "out of memory";
        case errc::device_error:
            return "device error";
    }
    return "error";
}

std::string Error::message() const {
    // The detail quotes what came from outside (names, reason phrases, URLs): made inert here,
    // where every message is printed from, and cut where a hostile value made it huge.
    constexpr std::size_t longest_message_bytes = 4096;
    std::string text(errc_name(code));
    if (!detail.empty()) {
        text += ": ";
        text += detail;
    }
    return printable(redact_secrets(text), longest_message_bytes);
}

Error with_context(Error error, std::string_view where) {
    if (where.empty() || std::string_view(error.detail).starts_with(where)) {
        return error;
    }
    error.detail = std::string(where) + ": " + error.detail;
    return error;
}

LoadError::LoadError(Error error) : std::runtime_error(error.message()), error_(std::move(error)) {}

void throw_exception_from_error(const Error& error, const boost::source_location&) {
    throw LoadError(error);
}

void assertion_failed(const char* condition, const char* message, const char* file, int line) {
    std::fprintf(stderr, "ringload: internal error at %s:%d: %s (%s)\n", file, line, message, condition);
    std::abort();
}

} // namespace ringload
