// engine/include/ringload/error.hpp
//
// Expected failures travel as values: `Result<T>` is `boost::system::result<T, Error>`, where
// `Error` is a closed error code plus a detail that names the file or URL, the tensor and the
// offset. Exceptions appear only at the boundaries (`.value()` throws `ringload::LoadError`).
//
//     Result<Index> parse(...) {
//         if (bytes.size() < 8) {
//             return fail(errc::truncated, "file ends inside the 8-byte length field");
//         }
//         RL_TRY(length, read_le_u64(bytes));
//         ...
//     }
#pragma once

#include <boost/system/result.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace ringload {

// The error categories a caller can act on. The text of each (errc_name) is part of the
// user-facing message and matches the categories of the tensorizer fixtures' bad/ manifest.
enum class errc : std::uint8_t {
    truncated,
    hash_mismatch,
    decryption_failed,
    not_tensorizer,
    unsupported_version,
    encrypted_no_key,
    not_encrypted_key_given,
    empty_index,
    invalid_tensor_name,
    format_error,
    io_error,
    not_found,
    invalid_argument,
    unsupported,
    cancelled,
    out_of_memory,
    device_error,      // a GPU call failed (CUDA's own name and message follow)
    signature_invalid, // a model signature that does not verify, or one for other files
};

std::string_view errc_name(errc code) noexcept;

// One error: what kind, and a sentence that names where ("model.tensors: tensor 'wte' ...").
struct Error {
    errc code = errc::io_error;
    std::string detail;

    // "truncated: model.tensors: tensor 'wte' ends at byte 1024 but the file has 1000 bytes"
    std::string message() const;
};

template <class T>
using Result = boost::system::result<T, Error>;

inline Error fail(errc code, std::string detail) {
    return Error{code, std::move(detail)};
}

// Prefixes the detail with a location (a path or URL) unless it already starts with it.
Error with_context(Error error, std::string_view where);

// What `.value()` throws, and what the Python binding maps to its exception hierarchy.
class LoadError : public std::runtime_error {
public:
    explicit LoadError(Error error);
    const Error& error() const noexcept { return error_; }

private:
    Error error_;
};

// Called by boost::system::result::value() through argument-dependent lookup.
[[noreturn]] void throw_exception_from_error(const Error& error, const boost::source_location& location);

} // namespace ringload

#define RL_CONCAT_INNER(a, b) a##b
#define RL_CONCAT(a, b) RL_CONCAT_INNER(a, b)

// RL_TRY(name, expr): evaluates a Result, returns its error from the enclosing function, or
// binds the value to `name`. RL_TRY_VOID(expr) does the same for Result<void>.
#define RL_TRY(name, expr)                                         \
    auto RL_CONCAT(rl_result_, __LINE__) = (expr);                 \
    if (!RL_CONCAT(rl_result_, __LINE__)) {                        \
        return std::move(RL_CONCAT(rl_result_, __LINE__)).error(); \
    }                                                              \
    auto name = std::move(*RL_CONCAT(rl_result_, __LINE__))

#define RL_TRY_VOID(expr)                             \
    do {                                              \
        auto rl_result_void = (expr);                 \
        if (!rl_result_void) {                        \
            return std::move(rl_result_void).error(); \
        }                                             \
    } while (false)

// RL_CO_TRY / RL_CO_TRY_VOID: the same inside a coroutine (co_return instead of return). Await
// into the macro, never build a temporary inside the co_await (g++ 12, see task.hpp):
//     RL_CO_TRY(n, co_await source.read_some_at(target, offset));
#define RL_CO_TRY(name, expr)                                         \
    auto RL_CONCAT(rl_result_, __LINE__) = (expr);                    \
    if (!RL_CONCAT(rl_result_, __LINE__)) {                           \
        co_return std::move(RL_CONCAT(rl_result_, __LINE__)).error(); \
    }                                                                 \
    auto name = std::move(*RL_CONCAT(rl_result_, __LINE__))

#define RL_CO_TRY_VOID(expr)                             \
    do {                                                 \
        auto rl_result_void = (expr);                    \
        if (!rl_result_void) {                           \
            co_return std::move(rl_result_void).error(); \
        }                                                \
    } while (false)

// Programmer errors: always checked, abort with the message.
#define RL_ASSERT(condition, message)                                              \
    do {                                                                           \
        if (!(condition)) {                                                        \
            ::ringload::assertion_failed(#condition, message, __FILE__, __LINE__); \
        }                                                                          \
    } while (false)

namespace ringload {
[[noreturn]] void assertion_failed(const char* condition, const char* message, const char* file, int line);
} // namespace ringload
