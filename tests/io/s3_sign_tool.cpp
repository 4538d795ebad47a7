// tests/io/s3_sign_tool.cpp
//
// Signs requests the way the S3 source and uploader do (s3_request_headers), for
// tests/io/sigv4_botocore_test.py, which signs the same requests with botocore's S3SigV4Auth.
// One JSON object per input line:
//     {"method": "GET", "url": "http://127.0.0.1:9000/b/a%20b?x=1", "headers": [["Range", "bytes=0-9"]],
//      "payload_sha256": "e3b0...", "region": "us-east-1", "access_key": "AKID", "secret_key": "...",
//      "token": "", "epoch": 1369353600}
// and one line out: {"headers": [["x-amz-date", "..."], ..., ["Authorization", "..."]]}.
#include "ringload/io/s3_signer.hpp"

#include <nlohmann/json.hpp>

#include <iostream>
#include <string>

int main() {
    std::string line;
    while (std::getline(std::cin, line)) {
        const auto in = nlohmann::json::parse(line);
        ringload::S3Config config;
        config.credentials = {in["access_key"], in["secret_key"], in.value("token", "")};
        config.region = in["region"];
        auto url = ringload::parse_http_url(in["url"].get<std::string>());
        if (!url) {
            std::cerr << url.error().message() << "\n";
            return 1;
        }
        std::vector<ringload::S3Header> extra;
        for (const auto& header : in["headers"]) {
            extra.emplace_back(header[0], header[1]);
        }
        const auto when = std::chrono::system_clock::from_time_t(in["epoch"].get<std::time_t>());
        const auto headers = ringload::s3_request_headers(config, *url, in["method"].get<std::string>(),
                                                          in["payload_sha256"].get<std::string>(), extra, when);
        nlohmann::json out;
        out["headers"] = headers;
        std::cout << out.dump() << std::endl;
    }
    return 0;
}
