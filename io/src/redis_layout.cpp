// io/src/redis_layout.cpp
#include "ringload/io/redis_layout.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace ringload {
namespace {

std::optional<std::string> percent_decode(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '%') {
            out += text[i];
            continue;
        }
        unsigned value = 0;
        if (i + 2 >= text.size()) {
            return std::nullopt;
        }
        auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
        if (ec != std::errc() || end != text.data() + i + 3) {
            return std::nullopt;
        }
        out += static_cast<char>(value);
        i += 2;
    }
    return out;
}

bool all_digits(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
}

} // namespace

std::string RedisUri::endpoint() const {
    return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + port;
}

namespace {

// Takes the user info off `authority` into out.user / out.password, and makes out.text, the
// URI with the password redacted: it is made first, so that no later message can carry it.
Result<void> take_credentials(RedisUri& out, std::string_view& authority, std::string_view path) {
    const auto at = authority.rfind('@');
    std::string_view userinfo = at == std::string_view::npos ? std::string_view() : authority.substr(0, at);
    if (at != std::string_view::npos) {
        authority.remove_prefix(at + 1);
    }
    const auto colon = userinfo.find(':');
    const std::string_view user = userinfo.substr(0, colon);
    const bool has_password = colon != std::string_view::npos;
    out.text = "redis://" +
               (at == std::string_view::npos ? std::string() : std::string(user) + (has_password ? ":***@" : "@")) +
               std::string(authority) + std::string(path);
    if (has_password) {
        auto password = percent_decode(userinfo.substr(colon + 1));
        auto decoded_user = percent_decode(user);
        if (!password || !decoded_user) {
            return fail(errc::invalid_argument, out.text + ": bad percent-encoding in the user or password");
        }
        out.user = std::move(*decoded_user);
        out.password = std::move(*password);
    } else if (!userinfo.empty()) {
        // redis-py reads "redis://secret@host" as a password without a user.
        auto password = percent_decode(userinfo);
        if (!password) {
            return fail(errc::invalid_argument, out.text + ": bad percent-encoding in the password");
        }
        out.password = std::move(*password);
        out.text = "redis://***@" + std::string(authority) + std::string(path);
    }
    return {};
}

// host, [v6 host] or either with :port (6379 when none).
Result<void> take_host_and_port(RedisUri& out, std::string_view authority) {
    std::string_view host = authority;
    std::string_view port;
    if (!authority.empty() && authority.front() == '[') {
        const auto close = authority.find(']');
        if (close == std::string_view::npos || (close + 1 < authority.size() && authority[close + 1] != ':')) {
            return fail(errc::invalid_argument, out.text + ": bad IPv6 address");
        }
        host = authority.substr(1, close - 1);
        port = close + 1 < authority.size() ? authority.substr(close + 2) : std::string_view();
    } else if (const auto port_colon = authority.rfind(':'); port_colon != std::string_view::npos) {
        host = authority.substr(0, port_colon);
        port = authority.substr(port_colon + 1);
    }
    if (host.empty()) {
        return fail(errc::invalid_argument, out.text + ": no host");
    }
    if (!port.empty() && (!all_digits(port) || port.size() > 5 || std::stoul(std::string(port)) == 0 ||
                          std::stoul(std::string(port)) > 65535)) {
        return fail(errc::invalid_argument, out.text + ": bad port '" + std::string(port) + "'");
    }
    out.host = std::string(host);
    out.port = port.empty() ? "6379" : std::string(port);
    return {};
}

} // namespace

Result<RedisUri> parse_redis_uri(std::string_view uri) {
    constexpr std::string_view scheme = "redis://";
    if (uri.size() < scheme.size() || !std::equal(scheme.begin(), scheme.end(), uri.begin(), [](char a, char b) {
            return a == std::tolower(static_cast<unsigned char>(b));
        })) {
        return fail(errc::invalid_argument, "not a redis:// URI");
    }
    RedisUri out;
    std::string_view rest = uri.substr(scheme.size());
    const auto path_start = rest.find('/');
    std::string_view authority = rest.substr(0, path_start);
    std::string_view path = path_start == std::string_view::npos ? std::string_view() : rest.substr(path_start);
    RL_TRY_VOID(take_credentials(out, authority, path));
    RL_TRY_VOID(take_host_and_port(out, authority));

    // tensorizer takes the path without its leading slashes as the prefix. A query or fragment
    // would silently fall off there; here it is refused.
    if (path.find_first_of("?#") != std::string_view::npos) {
        return fail(errc::invalid_argument, out.text + ": a redis:// URI has no query or fragment");
    }
    while (!path.empty() && path.front() == '/') {
        path.remove_prefix(1);
    }
    if (path.empty()) {
        return fail(errc::invalid_argument, out.text + ": no key prefix (redis://host:port/prefix)");
    }
    out.prefix = std::string(path);
    return out;
}

std::string redis_key(std::string_view prefix, std::string_view name, std::uint64_t offset_bytes) {
    std::string key;
    key.reserve(prefix.size() + name.size() + 22);
    key.append(prefix).append(":").append(name).append(":").append(std::to_string(offset_bytes));
    return key;
}

std::string redis_scan_pattern(std::string_view prefix) {
    std::string pattern;
    for (char c : prefix) {
        if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
            pattern += '\\';
        }
        pattern += c;
    }
    return pattern + ":*";
}

std::optional<std::uint64_t> redis_key_offset(std::string_view key) {
    const auto colon = key.rfind(':');
    if (colon == std::string_view::npos || !all_digits(key.substr(colon + 1))) {
        return std::nullopt;
    }
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(key.data() + colon + 1, key.data() + key.size(), value);
    if (ec != std::errc()) {
        return std::nullopt;
    }
    return value;
}

Result<std::uint64_t> tile_redis_keys(std::vector<RedisKeyRange>& keys, std::string_view prefix,
                                      const std::string& name) {
    if (keys.empty()) {
        return fail(errc::not_found, name + ": no keys under the prefix '" + std::string(prefix) + "'");
    }
    // Empty keys first at a shared offset, so that the non-empty key there is the one checked.
    std::sort(keys.begin(), keys.end(), [](const RedisKeyRange& a, const RedisKeyRange& b) {
        if (a.offset_bytes != b.offset_bytes) {
            return a.offset_bytes < b.offset_bytes;
        }
        if ((a.length_bytes == 0) != (b.length_bytes == 0)) {
            return a.length_bytes == 0;
        }
        return a.key < b.key;
    });
    const std::string header_key = redis_key(prefix, "header", 0);
    if (std::none_of(keys.begin(), keys.end(), [&](const RedisKeyRange& k) { return k.key == header_key; })) {
        return fail(errc::format_error, name + ": no key '" + header_key + "' (the file header and index)");
    }
    std::uint64_t end = 0;
    for (const RedisKeyRange& k : keys) {
        if (k.length_bytes == 0) {
            continue; // checked against the end below
        }
        if (k.offset_bytes > end) {
            return fail(errc::format_error, name + ": no key holds bytes " + std::to_string(end) + "-" +
                                                std::to_string(k.offset_bytes - 1) + " (a gap before key '" + k.key +
                                                "')");
        }
        if (k.offset_bytes < end) {
            return fail(errc::format_error, name + ": key '" + k.key + "' at offset " + std::to_string(k.offset_bytes) +
                                                " overlaps the key before it (which ends at " + std::to_string(end) +
                                                ")");
        }
        if (k.length_bytes > std::numeric_limits<std::uint64_t>::max() - end) {
            // Lengths come from the server (STRLEN): a hostile one's sum must not wrap to a small size.
            return fail(errc::format_error, name + ": key '" + k.key + "' of " + std::to_string(k.length_bytes) +
                                                " bytes at offset " + std::to_string(end) + " ends past 2^64 bytes");
        }
        end = k.offset_bytes + k.length_bytes;
    }
    for (const RedisKeyRange& k : keys) {
        if (k.length_bytes == 0 && k.offset_bytes > end) {
            return fail(errc::format_error, name + ": key '" + k.key + "' at offset " + std::to_string(k.offset_bytes) +
                                                " lies past the end (" + std::to_string(end) +
                                                " bytes): keys are missing before it");
        }
    }
    return end;
}

} // namespace ringload
