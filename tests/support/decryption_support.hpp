// tests/support/decryption_support.hpp
//
// The decryption a fixture manifest asks for, as DecryptionParams: fixture manifests say
// {"kind": "raw_key", "key_hex": ...} or {"kind": "passphrase", "passphrase": ...} under
// "encryption"; bad/ cases say {"decryption": "raw_key", "key_hex": ...} or
// {"decryption": "passphrase", "passphrase": ...} under "open_with".
#pragma once

#include "ringload/crypto_params.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringload::testing {

inline std::vector<std::byte> bytes_of_hex(const std::string& hex) {
    std::vector<std::byte> bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
        bytes.push_back(static_cast<std::byte>(std::stoi(hex.substr(i, 2), nullptr, 16)));
    }
    return bytes;
}

// `kind` is "raw_key", "passphrase" or null.
inline std::optional<DecryptionParams> decryption_for(const nlohmann::json& spec, const nlohmann::json& kind) {
    if (kind.is_null()) {
        return std::nullopt;
    }
    if (kind == "raw_key") {
        auto key = bytes_of_hex(spec["key_hex"].get<std::string>());
        return DecryptionParams::from_key(key).value();
    }
    if (kind == "passphrase") {
        return DecryptionParams::from_passphrase(spec["passphrase"].get<std::string>()).value();
    }
    throw std::runtime_error("unknown decryption kind in a manifest: " + kind.dump());
}

} // namespace ringload::testing
