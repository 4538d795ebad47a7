// tests/fuzz/http1_fuzz.cpp: what a hostile HTTP/1.1 server answers the http:// source, through
// the real client on a loopback socket (scripted_server.hpp): response heads (Beast's parser),
// Content-Range and Content-Length against the range asked for, chunked and unsized bodies,
// redirects (to any host: they all come back here), error statuses with their bodies (S3's XML
// explained), Retry-After, keep-alive, and a server that ignores Range (one streaming GET).
//
//     input:  [ flags byte ][ script: the server's responses, see scripted_server.hpp ]
//     flags:  bit 0: two connections, the bulk reads side by side
// Two attempts, 1 ms backoff, 200 ms timeout.
#include "fuzz_input.hpp"
#include "ringload/io/http_source.hpp"
#include "ringload/io/s3_error.hpp"
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
        options.connections = (flags & 1) != 0 ? 2 : 1;
        options.timeout = std::chrono::milliseconds(200);
        options.attempts = 2;
        options.backoff_base = std::chrono::milliseconds(1);
        options.backoff_max = std::chrono::milliseconds(1);
        options.range_size_bytes = 64 << 10;
        options.explain_error = [](unsigned /*status*/, std::string_view body) { return s3_error_summary(body); };
        auto opened = server.run(open_http_source(loop, server.url("/models/m.bin?v=1"), options));
        fuzz::trace("open", opened);
        if (opened) {
            fuzz::read_like_the_engine(server, **opened, (flags & 1) != 0);
        }
    }
    server.finish();
    return 0;
}
