// engine/include/ringload/engine/task.hpp
//
// Coroutines are Asio awaitables; errors come back as values (`use_task` = as_tuple), never as
// exceptions. Asio compiles once, in engine/src/asio_impl.cpp; include only the narrow headers.
//
// g++ 12: never build a temporary inside a co_await expression; build it, then await it:
//     auto op = asio::co_spawn(pool, work(args), asio::use_awaitable);
//     auto result = co_await std::move(op);
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace ringload {

namespace asio = boost::asio;

template <class T = void>
using Task = asio::awaitable<T>;

inline constexpr auto use_task = asio::as_tuple(asio::use_awaitable);

} // namespace ringload
