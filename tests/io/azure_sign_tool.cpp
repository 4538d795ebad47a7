// tests/io/azure_sign_tool.cpp
//
// Signs requests the way the Azure source does (azure_request_headers), for
// tests/io/azure_sign_test.py, which signs the same requests with azure-storage-blob's
// SharedKeyCredentialPolicy. One JSON object per input line:
//     {"method": "GET", "url": "http://127.0.0.1:10000/acct/c/a%20b", "headers": [["Range", "bytes=0-9"]],
//      "account": "acct", "key": "<base64>", "epoch": 1369353600}
// and one line out: {"headers": [["x-ms-version", "..."], ["x-ms-date", "..."], ["Authorization", "..."]],
//                    "string_to_sign": "GET\n..."}; an empty "key" signs nothing (anonymous).
// Or {"uri": "az://acct/c/dir/a b", "endpoint": "http://127.0.0.1:10000/acct"} -> {"url": "..."}: the blob's
// URL as the source builds it (azure_blob_url), anonymous.
#include "ringload/io/azure_signer.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <string>

namespace {

int print_url(const nlohmann::json& in) {
    auto location = ringload::parse_azure_uri(in["uri"].get<std::string>());
    if (!location) {
        std::cerr << location.error().message() << "\n";
        return 1;
    }
    ringload::AzureSettings settings;
    settings.endpoint = in.value("endpoint", "");
    settings.anonymous = true;
    const ringload::EnvLookup no_environment = [](const std::string&) { return std::optional<std::string>(); };
    auto config = ringload::resolve_azure_config(settings, *location, no_environment);
    if (!config) {
        std::cerr << config.error().message() << "\n";
        return 1;
    }
    std::cout << nlohmann::json{{"url", ringload::azure_blob_url(*config, *location)}}.dump() << std::endl;
    return 0;
}

} // namespace

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        const auto in = nlohmann::json::parse(line);
        if (in.contains("uri")) {
            if (print_url(in) != 0) {
                return 1;
            }
            continue;
        }
        ringload::AzureConfig config;
        config.account = in["account"];
        if (const std::string key = in["key"]; !key.empty()) {
            auto decoded = ringload::azure_decode_key(key);
            if (!decoded) {
                std::cerr << "not base64: the key of " << line << "\n";
                return 1;
            }
            config.auth = ringload::AzureAuth::shared_key;
            config.key = *decoded;
        }
        auto url = ringload::parse_http_url(in["url"].get<std::string>());
        if (!url) {
            std::cerr << url.error().message() << "\n";
            return 1;
        }
        std::vector<ringload::AzureHeader> sent;
        for (const auto& header : in["headers"]) {
            sent.emplace_back(header[0], header[1]);
        }
        const auto when = std::chrono::system_clock::from_time_t(in["epoch"].get<std::time_t>());
        const std::string method = in["method"];
        const auto headers = ringload::azure_request_headers(config, *url, method, sent, when);
        auto signed_headers = headers;
        signed_headers.insert(signed_headers.end(), sent.begin(), sent.end());
        nlohmann::json out;
        out["headers"] = headers;
        out["string_to_sign"] = ringload::azure_string_to_sign(method, *url, config.account, signed_headers);
        std::cout << out.dump() << std::endl;
    }
    return 0;
}
