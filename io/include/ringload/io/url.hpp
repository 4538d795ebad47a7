// io/include/ringload/io/url.hpp
//
// The parts of an http(s) URL a client needs: "http://host:8080/models/a.tensors?x=1" ->
// {scheme "http", host "host", port "8080", target "/models/a.tensors?x=1"}. IPv6 literals in
// brackets are kept with their brackets in `host_header` and without them in `host`.
#pragma once

#include "ringload/error.hpp"

#include <string>
#include <string_view>

namespace ringload {

struct Url {
    std::string scheme; // "http" or "https"
    std::string host;
    std::string port;        // the default for the scheme when the URL has none
    std::string target;      // path and query, "/" at least
    std::string host_header; // host[:port] as the Host header wants it

    std::string text() const { return scheme + "://" + host_header + target; }
};

Result<Url> parse_http_url(std::string_view text);

// The URI as messages may show it: a password in its user info ("redis://u:secret@h/p")
// replaced by "***", and signed or secret query parameters (a presigned URL's X-Amz-Signature,
// an Azure SAS sig=, token=) by REDACTED (redact_secrets). Anything else as it is.
std::string uri_for_messages(std::string_view uri);

} // namespace ringload
