// tests/fuzz/s3_config_fuzz.cpp: what S3 configuration and S3 servers hand the s3:// code as
// text: ~/.aws/credentials, ~/.aws/config and ~/.s3cfg (INI files, read from disk as in
// production), the environment and S3Options, resolved into a configuration, the object's URL
// made and a request signed with it; and S3's XML answers (an error's Code and Message, the
// elements an upload reads, a ListMultipartUploads listing).
//
//     input:  [ flags byte ] credentials \n~~file~~\n config \n~~file~~\n s3cfg
//             \n~~file~~\n environment \n~~file~~\n XML answer
//     environment: NAME=VALUE lines; "s3.endpoint=", "s3.region=", "s3.profile=",
//                  "s3.access_key_id=", "s3.secret_access_key=", "s3.session_token=" set
//                  S3Options, "uri=" the s3:// URI (else s3://bucket/dir/key)
//     flags:  bit 0: anonymous; bits 1-2: addressing (automatic, path, virtual host, automatic);
//             bit 3: the files named by AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE
// Files go to a directory made once per process (HOME for the lookup).
#include "fuzz_input.hpp"
#include "ringload/io/s3_config.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/s3_signer.hpp"
#include "ringload/io/s3_xml.hpp"
#include "ringload/io/url.hpp"

#include <sys/stat.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using namespace ringload;
using fuzz::split;

// HOME for the lookups, with .aws/ in it, in memory where there is /dev/shm (rewriting three
// files on ext4 each run took a quarter of the time); removed when the process exits (the
// path is never freed: the exit handler reads it after static destructors ran).
const std::string& home() {
    static const std::string* path = [] {
        const std::filesystem::path base =
            std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
        auto* dir = new std::string((base / "s3_config_fuzz.XXXXXX").string());
        if (::mkdtemp(dir->data()) == nullptr) {
            std::abort();
        }
        std::filesystem::create_directories(*dir + "/.aws");
        return dir;
    }();
    static const bool removed_at_exit = std::atexit([] { std::filesystem::remove_all(*path); }) == 0;
    (void)removed_at_exit;
    return *path;
}

void write_file(const std::string& path, std::string_view text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
}

// The environment lines into `env`, S3Options and the URI.
void take_environment(std::string_view text, std::map<std::string, std::string>& env, S3Options& options,
                      std::string& uri) {
    const std::map<std::string_view, std::string S3Options::*> fields = {
        {"s3.endpoint", &S3Options::endpoint},
        {"s3.region", &S3Options::region},
        {"s3.profile", &S3Options::profile},
        {"s3.access_key_id", &S3Options::access_key_id},
        {"s3.secret_access_key", &S3Options::secret_access_key},
        {"s3.session_token", &S3Options::session_token},
    };
    for (std::string_view line : split(text, "\n")) {
        const auto equals = line.find('=');
        if (equals == std::string_view::npos) {
            continue;
        }
        const std::string_view name = line.substr(0, equals);
        const std::string value(line.substr(equals + 1));
        if (auto field = fields.find(name); field != fields.end()) {
            options.*(field->second) = value;
        } else if (name == "uri") {
            uri = value;
        } else {
            env[std::string(name)] = value;
        }
    }
}

void resolve_and_sign(const std::vector<std::string_view>& pieces, std::uint8_t flags) {
    const std::string& dir = home();
    const char* names[] = {"/.aws/credentials", "/.aws/config", "/.s3cfg"};
    for (std::size_t i = 0; i < std::size(names); ++i) {
        write_file(dir + names[i], i < pieces.size() ? pieces[i] : std::string_view());
    }
    std::map<std::string, std::string> env{{"HOME", dir}};
    if ((flags & 8) != 0) {
        env["AWS_SHARED_CREDENTIALS_FILE"] = dir + names[0];
        env["AWS_CONFIG_FILE"] = dir + names[1];
    }
    S3Options options;
    options.anonymous = (flags & 1) != 0;
    options.addressing = std::array{S3Addressing::automatic, S3Addressing::path, S3Addressing::virtual_host,
                                    S3Addressing::automatic}[(flags >> 1) & 3];
    std::string uri = "s3://bucket/dir/key";
    if (pieces.size() > 3) {
        take_environment(pieces[3], env, options, uri);
    }
    const EnvLookup lookup = [&env](const std::string& name) -> std::optional<std::string> {
        auto found = env.find(name);
        return found == env.end() ? std::nullopt : std::optional<std::string>(found->second);
    };
    auto location = parse_s3_uri(uri);
    if (!location) {
        return;
    }
    auto config = resolve_s3_config(options, lookup, location->bucket);
    if (!config) {
        return;
    }
    if (config->region.empty() ||
        (!config->endpoint.starts_with("http://") && !config->endpoint.starts_with("https://"))) {
        __builtin_trap(); // resolve_s3_config promises a region and an http(s) endpoint
    }
    auto url = parse_http_url(s3_object_url(*config, *location));
    if (!url) {
        return; // an endpoint with no host, say: open_s3_source fails there too
    }
    const auto when = std::chrono::system_clock::time_point(std::chrono::seconds(1'800'000'000));
    const std::vector<S3Header> extra = {{"Content-Type", "application/octet-stream"}};
    (void)s3_request_headers(*config, *url, "GET", s3_empty_payload_sha256, extra, when);
}

void read_answer(std::string_view xml) {
    (void)s3_error_summary(xml);
    for (std::string_view name : {"UploadId", "ETag", "Code", "Key"}) {
        (void)s3_xml_text(xml, name);
    }
    for (const S3PendingUpload& upload : s3_pending_uploads(xml)) {
        if (upload.upload_id.empty()) {
            __builtin_trap(); // a listed upload always has its id
        }
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ringload::fuzz::Input input(data, size);
    const std::uint8_t flags = input.take_byte();
    const std::vector<std::string_view> pieces = split(input.text(), "\n~~file~~\n");
    resolve_and_sign(pieces, flags);
    read_answer(pieces.size() > 4 ? pieces[4] : pieces.back());
    return 0;
}
