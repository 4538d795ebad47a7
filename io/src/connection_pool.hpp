// io/src/connection_pool.hpp
//
// The keep-alive connections of a source that sends one request per connection at a time
// (HTTP/1.1, Redis): an idle one when there is one, else a new one while fewer than `limit` are
// open, else a wait until one comes back.
//
//     auto acquiring = pool_.acquire([&](asio::any_io_executor loop) { return std::make_unique<C>(loop); });
//     std::unique_ptr<C> connection = co_await std::move(acquiring);
//     ...
//     pool_.release(std::move(connection), reusable);   // idle again, or closed
// Thread: the loop thread.
#pragma once

#include "ringload/engine/task.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

namespace ringload {

template <class Connection>
class ConnectionPool {
public:
    ConnectionPool(asio::any_io_executor loop, std::size_t limit)
        : limit_(std::max<std::size_t>(limit, 1)), freed_(std::move(loop)) {
        freed_.expires_at(asio::steady_timer::time_point::max());
    }

    // Make: (asio::any_io_executor) -> std::unique_ptr<Connection>, not connected yet.
    template <class Make>
    Task<std::unique_ptr<Connection>> acquire(Make make) {
        for (;;) {
            if (!idle_.empty()) {
                auto connection = std::move(idle_.back());
                idle_.pop_back();
                co_return connection;
            }
            if (open_ < limit_) {
                ++open_;
                auto loop = co_await asio::this_coro::executor;
                co_return make(loop);
            }
            auto waited = co_await freed_.async_wait(use_task);
            (void)waited;
        }
    }

    // Back from a request: kept for the next one when `reusable`, else closed.
    void release(std::unique_ptr<Connection> connection, bool reusable) {
        if (reusable) {
            idle_.push_back(std::move(connection));
        } else {
            --open_;
        }
        freed_.cancel(); // wakes every waiter; each checks again
    }

    // Back from a request after forget(): closed, and not counted (forget stopped counting it).
    void discard(std::unique_ptr<Connection> connection) {
        connection.reset();
        freed_.cancel();
    }

    // Closes the idle connections and stops counting those in flight: their owners discard()
    // them (a redirect to another host, say).
    void forget() {
        idle_.clear();
        open_ = 0;
    }

private:
    std::size_t limit_;
    std::size_t open_ = 0;
    std::vector<std::unique_ptr<Connection>> idle_;
    asio::steady_timer freed_;
};

} // namespace ringload
