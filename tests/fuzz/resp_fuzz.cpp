// tests/fuzz/resp_fuzz.cpp: what a hostile Redis server answers the redis:// source, through the
// real client on a loopback socket (scripted_server.hpp): AUTH's reply, SCAN pages and STRLENs
// (hiredis's reader, with our limits), the keys' tiling (redis_layout.cpp), then GETRANGE
// replies (our "$<n>\r\n" line parsing, the bodies read straight into the destination).
//
//     input:  [ flags byte ][ script: the server's replies, see scripted_server.hpp ]
//     flags:  bit 0: the URI has a user and password (AUTH comes first)
//             bit 1: two connections, the bulk reads side by side
// The prefix is "m": keys are m:header:0, m:<name>:<offset>. One attempt, 200 ms timeout.
#include "fuzz_input.hpp"
#include "ringload/io/redis_source.hpp"
#include "scripted_server.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ringload;
    fuzz::Input input(data, size);
    const std::uint8_t flags = input.take_byte();
    fuzz::ScriptedServer& server = fuzz::ScriptedServer::instance();
    server.start(input.text());
    asio::io_context& loop = server.loop();
    {
        NetworkOptions options;
        options.timeout_seconds = 0.2;
        options.attempts = 1; // a retry waits 100 ms or more (the Redis source's backoff)
        options.connections = (flags & 2) != 0 ? 2 : 1;
        const std::string uri = "redis://" + std::string((flags & 1) != 0 ? "user:pw-7f3a9@" : "") +
                                "127.0.0.1:" + std::to_string(server.port()) + "/m";
        auto opened = server.run(open_redis_source(loop, uri, options));
        fuzz::trace("open", opened);
        if (opened) {
            fuzz::read_like_the_engine(server, **opened, (flags & 2) != 0);
        } else if (opened.error().detail.find("pw-7f3a9") != std::string::npos &&
                   input.text().find("pw-7f3a9") == std::string::npos) {
            __builtin_trap(); // the password never appears in a message (unless the server echoes it)
        }
    }
    server.finish();
    return 0;
}
