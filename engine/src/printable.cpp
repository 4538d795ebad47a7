// engine/src/printable.cpp
#include "ringload/printable.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdio>

namespace ringload {
namespace {

// The length of the UTF-8 sequence at text[at] and its code point, or 0 where it is not one
// (overlong forms, surrogates and code points past U+10FFFF are not).
std::size_t utf8_sequence(std::string_view text, std::size_t at, char32_t& code_point) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[at + k]); };
    const unsigned char lead = byte(0);
    std::size_t length = 0;
    char32_t minimum = 0;
    if (lead < 0x80) {
        code_point = lead;
        return 1;
    }
    if ((lead & 0xe0) == 0xc0) {
        length = 2, minimum = 0x80, code_point = lead & 0x1f;
    } else if ((lead & 0xf0) == 0xe0) {
        length = 3, minimum = 0x800, code_point = lead & 0x0f;
    } else if ((lead & 0xf8) == 0xf0) {
        length = 4, minimum = 0x10000, code_point = lead & 0x07;
    } else {
        return 0;
    }
    if (at + length > text.size()) {
        return 0;
    }
    for (std::size_t k = 1; k < length; ++k) {
        if ((byte(k) & 0xc0) != 0x80) {
            return 0;
        }
        code_point = (code_point << 6) | (byte(k) & 0x3f);
    }
    const bool surrogate = code_point >= 0xd800 && code_point <= 0xdfff;
    return code_point < minimum || code_point > 0x10ffff || surrogate ? 0 : length;
}

// Characters a terminal acts on or reorders text by.
bool needs_escape(char32_t c) {
    return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f) || (c >= 0x202a && c <= 0x202e) ||
           (c >= 0x2066 && c <= 0x2069) || c == 0x200e || c == 0x200f || c == 0x061c;
}

constexpr std::array<std::string_view, 11> secret_parameters = {"x-amz-signature",
                                                                "x-amz-credential",
                                                                "x-amz-security-token",
                                                                "x-goog-signature",
                                                                "x-goog-credential",
                                                                "signature",
                                                                "sig",
                                                                "token",
                                                                "access_token",
                                                                "x-ms-signature",
                                                                "awsaccesskeyid"};

bool is_secret_parameter(std::string_view name) {
    return std::any_of(secret_parameters.begin(), secret_parameters.end(), [&](std::string_view secret) {
        return name.size() == secret.size() && std::equal(name.begin(), name.end(), secret.begin(), [](char a, char b) {
                   return std::tolower(static_cast<unsigned char>(a)) == b;
               });
    });
}

} // namespace

std::string printable(std::string_view text, std::size_t max_bytes) {
    std::string out;
    out.reserve(std::min(text.size(), max_bytes) + 16);
    std::size_t at = 0;
    while (at < text.size()) {
        if (out.size() >= max_bytes) {
            return out + "...(" + std::to_string(text.size() - at) + " more bytes)";
        }
        char32_t c = 0;
        const std::size_t length = utf8_sequence(text, at, c);
        char escape[16];
        if (length == 0) {
            std::snprintf(escape, sizeof escape, "\\x%02x", static_cast<unsigned char>(text[at]));
            out += escape;
            ++at;
        } else if (needs_escape(c)) {
            std::snprintf(escape, sizeof escape, "\\u{%x}", static_cast<unsigned>(c));
            out += escape;
            at += length;
        } else {
            out.append(text.substr(at, length));
            at += length;
        }
    }
    return out;
}

std::string redact_secrets(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::size_t at = 0;
    while (at < text.size()) {
        const char c = text[at];
        out += c;
        ++at;
        if (c != '?' && c != '&') {
            continue;
        }
        // A query parameter starts here: name=value, the value up to '&', '#', a quote, ':', ',' or
        // space (signatures and SAS tokens percent-encode all of them).
        const std::size_t equals = text.find('=', at);
        if (equals == std::string_view::npos) {
            continue;
        }
        const std::string_view name = text.substr(at, equals - at);
        if (name.find_first_of("&?#'\" \t\n") != std::string_view::npos || !is_secret_parameter(name)) {
            continue;
        }
        std::size_t end = text.find_first_of("&#'\":, \t\r\n", equals + 1); // ':' ends a URL in "URL: why"
        end = end == std::string_view::npos ? text.size() : end;
        out.append(name);
        out += "=REDACTED";
        at = end;
    }
    return out;
}

} // namespace ringload
