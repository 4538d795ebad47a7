// tests/fuzz/scripted_server.hpp
//
// The server side of the network fuzz targets (resp_fuzz, http1_fuzz, http2_fuzz): a socket on
// 127.0.0.1 that answers the real clients (RedisSource, the HTTP/1.1 and HTTP/2 sources) with
// the fuzz input, so that every byte a hostile server could send goes through the code that
// reads it in production: sockets, buffers, parsers, retries. The input is a script:
//
//     input:  [ chunk ] \n~~wait~~\n [ chunk ] ... \n~~connection~~\n [ chunk ] ...
//             '---- the 1st connection accepted ----'                 '-- the 2nd --' ...
//
// A connection sends nothing before the client has sent something on it; after that, each
// time the client waits (the loop has nothing ready to run), the next chunk of the first such
// connection with one left goes out, and once a connection's chunks are all out its write side
// is shut, so that the client sees EOF at once: no run waits for a timeout. Connections past
// the last script get EOF alone.
//
//     ScriptedServer& server = ScriptedServer::instance();
//     server.start(input.text());
//     asio::io_context& loop = server.loop();
//     {
//         auto opened = server.run(open_http_source(loop, server.url("/m.bin"), options));
//         ...
//     }                  // the source and its connections are gone
//     server.finish();   // closes the server's side; the client's leftovers run to their end
//
// The loop lives as long as the process (a fresh one per run would start a resolver thread
// each time); a client that leaves work on it which does not end once its source is gone traps.
// No DNS either: while linked in, every getaddrinfo() answers 127.0.0.1 and the server's port
// (scripted_server.cpp), so that a redirect to any host comes back here.
// Thread: the fuzzer's thread (the loop runs on it; the server needs no thread of its own).
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/engine/task.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ringload::fuzz {

class ScriptedServer {
public:
    // Listens on 127.0.0.1 at a free port, once per process.
    static ScriptedServer& instance();

    std::uint16_t port() const { return port_; }
    // "http://127.0.0.1:<port><path>"
    std::string url(std::string_view path) const;

    // Takes the scripts of the next connections (the input outlives the run) and forgets the
    // previous ones.
    void start(std::string_view input);
    // Closes every connection of this run and any not accepted yet, then runs what the client
    // left on the loop to its end (its source is gone: its sockets are closed).
    void finish();

    // The loop every client of a run uses.
    asio::io_context& loop() { return loop_; }

    // Runs `task` on the loop until it is done, serving the connections whenever the loop waits.
    // The loop keeps what else it holds (a connection's reader) for the next run.
    template <class T>
    T run(Task<T> task) {
        std::vector<Task<T>> tasks;
        tasks.push_back(std::move(task));
        return std::move(run_all(std::move(tasks)).front());
    }

    // The same for tasks that run side by side (reads sharing a connection pool); their
    // results in the tasks' order.
    template <class T>
    std::vector<T> run_all(std::vector<Task<T>> tasks) {
        std::vector<std::optional<T>> out(tasks.size());
        std::size_t running = tasks.size();
        std::exception_ptr thrown;
        for (std::size_t i = 0; i < tasks.size(); ++i) {
            asio::co_spawn(loop_, std::move(tasks[i]), [&, i](std::exception_ptr error, T result) {
                thrown = error ? error : thrown;
                out[i].emplace(std::move(result));
                --running;
            });
        }
        while (running > 0) {
            if (loop_.stopped()) {
                loop_.restart();
            }
            if (loop_.poll() > 0 || running == 0) {
                continue;
            }
            if (!serve()) {
                // The client waits for a timer (a backoff, a timeout) or the resolver's thread.
                loop_.run_one_for(std::chrono::milliseconds(20));
            }
        }
        if (thrown) {
            std::rethrow_exception(thrown); // an exception out of the client is a bug: the fuzzer reports it
        }
        std::vector<T> results;
        for (auto& result : out) {
            results.push_back(std::move(*result));
        }
        return results;
    }

private:
    struct Connection {
        int fd = -1;
        std::vector<std::string_view> chunks;
        std::size_t next_chunk = 0;
        std::string_view unsent; // what is left of the chunk being sent
        bool heard = false;      // the client has sent something
        bool shut = false;       // write side shut: the client saw or will see EOF
        bool closed = false;
    };

    ScriptedServer();
    void close_all();
    // One step of the server's side; false when there was nothing to do.
    bool serve();
    bool accept_all();
    static bool receive(Connection& connection);
    static bool send_unsent(Connection& connection);
    static void close(Connection& connection);

    asio::io_context loop_;
    int listener_ = -1;
    std::uint16_t port_ = 0;
    std::vector<std::vector<std::string_view>> scripts_;
    std::vector<Connection> connections_;
};

// With RINGLOAD_FUZZ_TRACE set, what each step came to goes to stderr (for writing seeds).
template <class T>
void trace(std::string_view step, const Result<T>& result) {
    static const bool tracing = std::getenv("RINGLOAD_FUZZ_TRACE") != nullptr;
    if (tracing) {
        std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(step.size()), step.data(),
                     result ? "ok" : result.error().detail.c_str());
    }
}

// What the engine asks of an opened source, against the rest of the script: a small read at
// the start (format detection), then bulk reads in the middle and at the end (side by side or
// one after the other), then one behind them (a sequential HTTP stream restarts); like the
// engine, it stops at the first failure. Sizes are the server's word: reads stay within 16 KiB
// each. A read that claims more bytes than asked for traps.
inline void read_like_the_engine(ScriptedServer& server, Source& source, bool side_by_side) {
    constexpr std::size_t read_bytes = 16 << 10;
    auto check = [](const Result<std::size_t>& read, std::size_t asked) {
        trace(read ? "read " + std::to_string(*read) + " bytes" : std::string("read"), read);
        if (read && *read > asked) {
            __builtin_trap();
        }
        return read.has_value();
    };
    std::vector<std::byte> small(64);
    if (!check(server.run(source.read_small_at(0, small)), small.size())) {
        return;
    }
    const std::uint64_t size = source.size_bytes();
    const std::uint64_t offsets[] = {size / 2, size - std::min<std::uint64_t>(size, read_bytes), 0};
    std::vector<std::vector<std::byte>> buffers(std::size(offsets), std::vector<std::byte>(read_bytes));
    auto read = [&](std::size_t i) {
        ReadTarget target;
        target.in_place = buffers[i].data();
        target.length_bytes = buffers[i].size();
        return source.read_some_at(offsets[i], target);
    };
    if (side_by_side) {
        std::vector<Task<Result<std::size_t>>> reads;
        reads.push_back(read(0));
        reads.push_back(read(1));
        const auto results = server.run_all(std::move(reads));
        const bool first = check(results[0], read_bytes);
        const bool second = check(results[1], read_bytes);
        if (!first || !second) {
            return;
        }
    } else if (!check(server.run(read(0)), read_bytes) || !check(server.run(read(1)), read_bytes)) {
        return;
    }
    check(server.run(read(2)), read_bytes);
}

} // namespace ringload::fuzz
