// io/src/url.cpp
#include "ringload/io/url.hpp"

#include "ringload/printable.hpp"

#include <algorithm>
#include <cctype>

namespace ringload {

Result<Url> parse_http_url(std::string_view text) {
    Url url;
    const auto scheme_end = text.find("://");
    if (scheme_end == std::string_view::npos) {
        return fail(errc::invalid_argument, std::string(text) + ": not a URL (no scheme://)");
    }
    url.scheme = std::string(text.substr(0, scheme_end));
    std::transform(url.scheme.begin(), url.scheme.end(), url.scheme.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (url.scheme != "http" && url.scheme != "https") {
        return fail(errc::unsupported, std::string(text) + ": scheme " + url.scheme + " is not http or https");
    }
    std::string_view rest = text.substr(scheme_end + 3);
    const auto path_start = rest.find_first_of("/?#");
    std::string_view authority = rest.substr(0, path_start);
    std::string_view target = path_start == std::string_view::npos ? std::string_view("/") : rest.substr(path_start);
    target = target.substr(0, target.find('#')); // a fragment never goes to the server
    if (authority.find('@') != std::string_view::npos) {
        return fail(errc::unsupported, url.scheme + "://...: credentials in the URL are not supported");
    }
    if (authority.empty()) {
        return fail(errc::invalid_argument, std::string(text) + ": no host");
    }
    std::string_view host = authority;
    std::string_view port;
    if (authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            return fail(errc::invalid_argument, std::string(text) + ": unterminated IPv6 address");
        }
        host = authority.substr(1, close - 1);
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':') {
                return fail(errc::invalid_argument, std::string(text) + ": bad authority");
            }
            port = authority.substr(close + 2);
        }
    } else if (const auto colon = authority.rfind(':'); colon != std::string_view::npos) {
        host = authority.substr(0, colon);
        port = authority.substr(colon + 1);
    }
    if (host.empty() || (!port.empty() && !std::all_of(port.begin(), port.end(),
                                                       [](unsigned char c) { return std::isdigit(c) != 0; }))) {
        return fail(errc::invalid_argument, std::string(text) + ": bad host or port");
    }
    url.host = std::string(host);
    url.port = port.empty() ? (url.scheme == "https" ? "443" : "80") : std::string(port);
    url.host_header = std::string(authority);
    url.target = target.empty() || target.front() != '/' ? "/" + std::string(target) : std::string(target);
    return url;
}

std::string uri_for_messages(std::string_view text) {
    const std::string redacted = redact_secrets(text); // presigned URLs' signatures, SAS tokens
    const std::string_view uri = redacted;
    const auto scheme_end = uri.find("://");
    if (scheme_end == std::string_view::npos) {
        return std::string(uri);
    }
    const std::size_t authority = scheme_end + 3;
    const std::size_t authority_end = std::min(uri.find_first_of("/?#", authority), uri.size());
    const auto at = uri.rfind('@', authority_end);
    if (at == std::string_view::npos || at < authority) {
        return std::string(uri);
    }
    const auto colon = uri.find(':', authority);
    if (colon == std::string_view::npos || colon > at) {
        return std::string(uri);
    }
    return std::string(uri.substr(0, colon + 1)) + "***" + std::string(uri.substr(at));
}

} // namespace ringload
