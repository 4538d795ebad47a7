// tests/fuzz/network_text_fuzz.cpp: what servers and users hand the network layer as text:
// URLs (http(s), s3, redis), a response's Content-Range and Content-Length, an S3 XML error
// body, a redirect's Location, and the escaping and redaction every message goes through.
#include "fuzz_input.hpp"
#include "io/src/http_object.hpp"
#include "ringload/io/redis_layout.hpp"
#include "ringload/io/s3_config.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/url.hpp"
#include "ringload/printable.hpp"

#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ringload;
    fuzz::Input input(data, size);
    const std::string_view text = input.text();
    (void)parse_http_url(text);
    (void)parse_s3_uri(text);
    (void)parse_redis_uri(text);
    (void)redis_key_offset(text);
    (void)http_object::parse_content_range(text);
    (void)http_object::parse_number(text);
    (void)s3_error_summary(text);
    (void)uri_for_messages(text);
    const std::string shown = printable(redact_secrets(text), 256);
    if (printable(shown) != shown) { // printable's output is printable: applying it twice is a no-op
        __builtin_trap();
    }
    static const Url from = parse_http_url("https://example.com/a/b?x=1").value();
    (void)http_object::resolve_redirect(from, std::string(text), "fuzz");
    return 0;
}
