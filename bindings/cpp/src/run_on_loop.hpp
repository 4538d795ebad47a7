// bindings/cpp/src/run_on_loop.hpp
//
// Runs one task to completion on a loop that the calling thread drives: the public API is
// blocking, the engine inside is coroutines.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <exception>
#include <optional>
#include <string>

namespace ringload {

template <class T>
Result<T> run_on_loop(asio::io_context& loop, Task<Result<T>> task) {
    std::optional<Result<T>> out;
    // The loop stops when the task is done: a source may keep work of its own on it (an HTTP/2
    // connection's reader waits on its socket between loads).
    asio::co_spawn(loop, std::move(task), [&out, &loop](std::exception_ptr error, Result<T> result) {
        if (error) {
            try {
                std::rethrow_exception(error);
            } catch (const std::exception& e) {
                out.emplace(fail(errc::io_error, std::string("internal error: ") + e.what()));
            }
        } else {
            out.emplace(std::move(result));
        }
        loop.stop();
    });
    loop.restart();
    loop.run();
    RL_ASSERT(out.has_value(), "the loop stopped before the task finished");
    return std::move(*out);
}

} // namespace ringload
