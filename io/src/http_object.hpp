// io/src/http_object.hpp
//
// What the HTTP/1.1 and HTTP/2 sources share about the object behind a URL: the answer to a
// range request checked against the object's first answer (size and validator pinned, so that
// a change mid-load is an error), and where a redirect leads. Which failures are worth a retry,
// and the pause in between: retry_policy.hpp.
#pragma once

#include "ringload/error.hpp"
#include "ringload/io/url.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ringload::http_object {

constexpr std::size_t max_redirects = 5;

// What both HTTP sources refuse before connecting: no connections, or a range size that is not
// a multiple of 4096 bytes (the ring's slots hold whole pages for O_DIRECT).
Result<void> check_settings(const std::string& url, std::size_t connections, std::size_t range_size_bytes);

std::optional<std::uint64_t> parse_number(std::string_view text);

// "bytes A-B/T" -> A, B, T (T may be "*").
struct ContentRange {
    std::uint64_t first = 0;
    std::uint64_t last = 0;
    std::optional<std::uint64_t> total;
};
std::optional<ContentRange> parse_content_range(std::string_view text);

bool is_redirect(unsigned status);

// An informational 1xx response (100 Continue, 103 Early Hints): a head without a body that a
// server may send before the final response, which a client passes over. Not 101 Switching
// Protocols, which ends HTTP on the connection (never asked for here: an unexpected status).
bool is_interim(unsigned status);
// How many interim responses may come before the final one: a server that only ever says
// "wait" is refused, not read for ever.
constexpr int max_interim_responses = 8;

// The headers of a response that matter here.
struct ResponseFacts {
    unsigned status = 0;
    std::string reason; // empty over HTTP/2
    std::string content_range;
    std::string etag;
    std::string last_modified;
    std::string location;
    std::string retry_after;
};

// The first response's facts, which every later response must repeat.
class PinnedObject {
public:
    explicit PinnedObject(std::string name) : name_(std::move(name)) {}

    bool known() const { return known_; }
    // How much of `wanted` bytes at `offset_bytes` the object has (all of them while its size
    // is not known yet; 0 at or past its end).
    std::size_t readable_length(std::uint64_t offset_bytes, std::size_t wanted) const {
        if (!known_) {
            return wanted;
        }
        return offset_bytes >= size_bytes_
                   ? 0
                   : static_cast<std::size_t>(std::min<std::uint64_t>(wanted, size_bytes_ - offset_bytes));
    }
    std::uint64_t size_bytes() const { return size_bytes_; }
    // "734003200 bytes, ETag \"65f2-2bc\"" (Source::version); "" before the object is known or
    // when its answers carry no validator.
    std::string version() const {
        return known_ && !validator_name_.empty()
                   ? std::to_string(size_bytes_) + " bytes, " + validator_name_ + " " + validator_
                   : std::string();
    }
    // Pins size and validator from a whole-object answer (a server that ignores Range).
    void pin_whole(std::uint64_t size_bytes, const ResponseFacts& response);
    bool same_whole(std::uint64_t size_bytes, const ResponseFacts& response) const;

    // Status, Content-Range and validator of a response to "bytes=offset-...". The first one
    // pins the object's size and validator; later ones must repeat them.
    Result<void> check_range(const ResponseFacts& response, std::uint64_t offset_bytes, std::size_t length);

    Error range_error(const std::string& what, std::uint64_t offset_bytes, std::size_t length) const;
    const std::string& name() const { return name_; }

private:
    static std::pair<std::string, std::string> validator_of(const ResponseFacts& response);

    std::string name_;
    bool known_ = false;
    std::uint64_t size_bytes_ = 0;
    std::string validator_name_; // "ETag" or "Last-Modified"; empty when the server sends neither
    std::string validator_;
};

// The absolute URL a Location header (absolute, scheme-relative, absolute-path or relative)
// points to from `from`; only http and https, and the same scheme as `from`.
Result<Url> resolve_redirect(const Url& from, const std::string& location, const std::string& name);

// Retry-After in seconds (HTTP dates are not honoured: 0).
std::chrono::milliseconds retry_after_of(const ResponseFacts& response);

} // namespace ringload::http_object
