// tests/fuzz/http2_fuzz.cpp: what a hostile HTTP/2 server sends the h2c source, through the real
// client on a loopback socket (scripted_server.hpp): frames into our nghttp2 session and its
// callbacks (headers of 1xx and final responses, DATA into the destination, resets, GOAWAY,
// SETTINGS, window updates), then the responses judged against the ranges asked for, redirects
// (to any host: they all come back here), and the fall back to HTTP/1.1 for a server that
// ignores Range.
//
//     input:  [ flags byte ][ script: the server's bytes, see scripted_server.hpp ]
//     flags:  bit 0: two streams per connection, the bulk reads side by side
//             bit 1: two connections
// The script starts with the server's SETTINGS (nothing is prepended); the probe is stream 1.
// Two attempts, 1 ms backoff, 200 ms timeout.
#include "fuzz_input.hpp"
#include "ringload/io/http2_source.hpp"
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
        HttpSourceOptions options;
        options.connections = (flags & 2) != 0 ? 2 : 1;
        options.timeout = std::chrono::milliseconds(200);
        options.attempts = 2;
        options.backoff_base = std::chrono::milliseconds(1);
        options.backoff_max = std::chrono::milliseconds(1);
        options.range_size_bytes = 64 << 10;
        Http2SourceOptions http2;
        http2.streams_per_connection = (flags & 1) != 0 ? 2 : 1;
        http2.allow_http1 = true;
        auto opened = server.run(open_http2_source(loop, server.url("/models/m.bin?v=1"), options, http2));
        fuzz::trace("open", opened);
        if (opened) {
            fuzz::read_like_the_engine(server, **opened, (flags & 1) != 0);
        }
    }
    server.finish();
    return 0;
}
