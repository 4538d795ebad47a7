// io/src/http_object.cpp
#include "http_object.hpp"

#include <algorithm>
#include <charconv>

namespace ringload::http_object {

Result<void> check_settings(const std::string& url, std::size_t connections, std::size_t range_size_bytes) {
    if (connections == 0) {
        return fail(errc::invalid_argument, url + ": 0 connections");
    }
    if (range_size_bytes % 4096 != 0) {
        return fail(errc::invalid_argument,
                    url + ": the range size must be a multiple of 4096 bytes, not " + std::to_string(range_size_bytes));
    }
    return {};
}

std::optional<std::uint64_t> parse_number(std::string_view text) {
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
        return std::nullopt;
    }
    return value;
}

std::optional<ContentRange> parse_content_range(std::string_view text) {
    if (!text.starts_with("bytes ")) {
        return std::nullopt;
    }
    text.remove_prefix(6);
    const auto dash = text.find('-');
    const auto slash = text.find('/');
    if (dash == std::string_view::npos || slash == std::string_view::npos || dash > slash) {
        return std::nullopt;
    }
    auto first = parse_number(text.substr(0, dash));
    auto last = parse_number(text.substr(dash + 1, slash - dash - 1));
    if (!first || !last || *last < *first) {
        return std::nullopt;
    }
    ContentRange range{*first, *last, std::nullopt};
    if (text.substr(slash + 1) != "*") {
        range.total = parse_number(text.substr(slash + 1));
        if (!range.total) {
            return std::nullopt;
        }
    }
    return range;
}

bool is_redirect(unsigned status) {
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

bool is_interim(unsigned status) {
    return status >= 100 && status < 200 && status != 101;
}

std::pair<std::string, std::string> PinnedObject::validator_of(const ResponseFacts& response) {
    if (!response.etag.empty()) {
        return {"ETag", response.etag};
    }
    if (!response.last_modified.empty()) {
        return {"Last-Modified", response.last_modified};
    }
    return {"", ""};
}

void PinnedObject::pin_whole(std::uint64_t size_bytes, const ResponseFacts& response) {
    size_bytes_ = size_bytes;
    std::tie(validator_name_, validator_) = validator_of(response);
    known_ = true;
}

bool PinnedObject::same_whole(std::uint64_t size_bytes, const ResponseFacts& response) const {
    return size_bytes == size_bytes_ && validator_of(response) == std::pair{validator_name_, validator_};
}

Error PinnedObject::range_error(const std::string& what, std::uint64_t offset_bytes, std::size_t length) const {
    return fail(errc::io_error, name_ + ": bytes " + std::to_string(offset_bytes) + "-" +
                                    std::to_string(offset_bytes + length - 1) + ": " + what);
}

Result<void> PinnedObject::check_range(const ResponseFacts& response, std::uint64_t offset_bytes, std::size_t length) {
    const unsigned status = response.status;
    const std::string status_text =
        "HTTP " + std::to_string(status) + (response.reason.empty() ? "" : " " + response.reason);
    if (status == 404 || status == 410) {
        return fail(errc::not_found, name_ + ": " + status_text);
    }
    if (status == 200) {
        return range_error("the server ignored the Range header (HTTP 200): range reads are needed", offset_bytes,
                           length);
    }
    if (is_redirect(status)) { // one with a Location was followed before the check
        return range_error("HTTP " + std::to_string(status) + " without a Location", offset_bytes, length);
    }
    if (status != 206) {
        return range_error(status_text, offset_bytes, length);
    }
    auto range = parse_content_range(response.content_range);
    if (!range || range->first != offset_bytes || !range->total || range->last >= *range->total) {
        return range_error("a 206 response with Content-Range '" + response.content_range + "'", offset_bytes, length);
    }
    auto [validator_name, validator] = validator_of(response);
    if (!known_) {
        size_bytes_ = *range->total;
        validator_name_ = validator_name;
        validator_ = validator;
        known_ = true;
        return {};
    }
    if (*range->total != size_bytes_ || validator_name != validator_name_ || validator != validator_) {
        return fail(errc::io_error,
                    name_ + ": object changed while loading (" +
                        (*range->total != size_bytes_
                             ? "size " + std::to_string(size_bytes_) + " -> " + std::to_string(*range->total)
                             : validator_name_ + " " + validator_ + " -> " + validator) +
                        ")");
    }
    return {};
}

Result<Url> resolve_redirect(const Url& from, const std::string& location, const std::string& name) {
    std::string absolute = location;
    if (location.find("://") == std::string::npos) {
        if (location.starts_with("//")) {
            absolute = from.scheme + ":" + location;
        } else if (location.starts_with("/")) {
            absolute = from.scheme + "://" + from.host_header + location;
        } else {
            const std::string path = from.target.substr(0, from.target.find('?'));
            absolute = from.scheme + "://" + from.host_header + path.substr(0, path.rfind('/') + 1) + location;
        }
    }
    auto parsed = parse_http_url(absolute);
    if (!parsed) {
        return fail(errc::io_error, name + ": a redirect to an unusable URL: " + parsed.error().detail);
    }
    if (parsed->scheme != from.scheme) {
        return fail(errc::unsupported, name + ": redirected from " + from.scheme + ":// to " + parsed->scheme +
                                           "://, which is not supported yet");
    }
    return parsed;
}

std::chrono::milliseconds retry_after_of(const ResponseFacts& response) {
    if (auto seconds = parse_number(response.retry_after)) {
        return std::chrono::seconds(*seconds);
    }
    return std::chrono::milliseconds(0);
}

} // namespace ringload::http_object
