// formats/model_signing/base64.cpp
#include "formats/model_signing/base64.hpp"

#include "ringload/engine/hashes.hpp"

#include <openssl/evp.h>

#include <cctype>

namespace ringload::model_signing {

std::string base64_encode(std::string_view bytes) {
    std::string text(4 * ((bytes.size() + 2) / 3), '\0');
    const int written =
        EVP_EncodeBlock(reinterpret_cast<unsigned char*>(text.data()),
                        reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
    text.resize(static_cast<std::size_t>(written));
    return text;
}

Result<std::string> base64_decode(std::string_view text, std::string_view what) {
    std::string clean;
    for (char c : text) {
        if (!std::isspace(static_cast<unsigned char>(c))) {
            clean.push_back(c);
        }
    }
    if (clean.size() % 4 != 0) {
        return fail(errc::format_error, std::string(what) + " is not base64 (its length is not a multiple of 4)");
    }
    std::string bytes(clean.size() / 4 * 3, '\0');
    const int written =
        EVP_DecodeBlock(reinterpret_cast<unsigned char*>(bytes.data()),
                        reinterpret_cast<const unsigned char*>(clean.data()), static_cast<int>(clean.size()));
    if (written < 0) {
        return fail(errc::format_error, std::string(what) + " is not base64");
    }
    // EVP_DecodeBlock counts the padding as zero bytes.
    std::size_t padding = 0;
    for (auto it = clean.rbegin(); it != clean.rend() && *it == '=' && padding < 2; ++it) {
        ++padding;
    }
    bytes.resize(static_cast<std::size_t>(written) - padding);
    return bytes;
}

std::string to_hex(std::string_view bytes) {
    return ringload::to_hex(std::span(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()));
}

Result<std::string> from_hex(std::string_view text, std::string_view what) {
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    };
    if (text.size() % 2 != 0) {
        return fail(errc::format_error, std::string(what) + " is not hex (odd length)");
    }
    std::string bytes;
    bytes.reserve(text.size() / 2);
    for (std::size_t i = 0; i < text.size(); i += 2) {
        const int high = nibble(text[i]);
        const int low = nibble(text[i + 1]);
        if (high < 0 || low < 0) {
            return fail(errc::format_error, std::string(what) + " is not hex");
        }
        bytes.push_back(static_cast<char>(high * 16 + low));
    }
    return bytes;
}

} // namespace ringload::model_signing
