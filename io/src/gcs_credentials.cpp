// io/src/gcs_credentials.cpp
#include "gcs_credentials.hpp"

#include "ringload/io/source_registry.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace ringload {
namespace {

// Key files are a few KiB; a larger one is no key file.
constexpr std::uintmax_t key_file_bytes_max = 1 << 20;

std::string field(const nlohmann::json& json, const char* name) {
    const auto found = json.find(name);
    return found != json.end() && found->is_string() ? found->get<std::string>() : std::string();
}

Result<std::string> read_key_file(const std::string& path, const std::string& from) {
    std::error_code error;
    const auto size = std::filesystem::file_size(path, error);
    if (error) {
        return fail(errc::not_found, from + ": cannot read the credentials file: " + error.message());
    }
    if (size > key_file_bytes_max) {
        return fail(errc::invalid_argument, from + ": " + std::to_string(size) + " bytes is too big for a key file");
    }
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
        return fail(errc::io_error, from + ": cannot read the credentials file");
    }
    return text.str();
}

Result<GcsCredentials> load_key_file(const std::string& path, const std::string& from) {
    RL_TRY(text, read_key_file(path, from));
    return parse_gcs_credentials(text, from);
}

// gcloud's configuration folder, as gcloud and Google's libraries find it.
std::string gcloud_config_dir(const EnvLookup& env) {
    if (auto dir = env("CLOUDSDK_CONFIG"); dir && !dir->empty()) {
        return *dir;
    }
    const auto home = env("HOME");
    return home && !home->empty() ? *home + "/.config/gcloud" : std::string();
}

GcsCredentials metadata_server(const EnvLookup& env) {
    GcsCredentials credentials;
    credentials.kind = GcsCredentialKind::metadata_server;
    const auto host = env("GCE_METADATA_HOST");
    credentials.metadata_host = host && !host->empty() ? *host : std::string(gcs_default_metadata_host);
    credentials.from = "the metadata server at " + credentials.metadata_host;
    return credentials;
}

} // namespace

Result<GcsCredentials> parse_gcs_credentials(std::string_view json_text, const std::string& from) {
    const auto json = nlohmann::json::parse(json_text, nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
        return fail(errc::invalid_argument, from + ": not a JSON credentials file");
    }
    GcsCredentials credentials;
    const std::string type = field(json, "type");
    credentials.token_uri = field(json, "token_uri");
    if (credentials.token_uri.empty()) {
        credentials.token_uri = gcs_default_token_uri;
    }
    if (type == "service_account") {
        credentials.kind = GcsCredentialKind::service_account;
        credentials.client_email = field(json, "client_email");
        credentials.private_key_pem = field(json, "private_key");
        credentials.private_key_id = field(json, "private_key_id");
        if (credentials.client_email.empty() || credentials.private_key_pem.empty()) {
            return fail(errc::invalid_argument, from + ": a service account key needs client_email and private_key");
        }
        credentials.from = from + ": service account " + credentials.client_email;
        return credentials;
    }
    if (type == "authorized_user") {
        credentials.kind = GcsCredentialKind::authorized_user;
        credentials.client_id = field(json, "client_id");
        credentials.client_secret = field(json, "client_secret");
        credentials.refresh_token = field(json, "refresh_token");
        if (credentials.client_id.empty() || credentials.client_secret.empty() || credentials.refresh_token.empty()) {
            return fail(errc::invalid_argument,
                        from + ": user credentials need client_id, client_secret and refresh_token");
        }
        credentials.from = from + ": user credentials";
        return credentials;
    }
    return fail(errc::unsupported, from + ": credentials of type '" + type +
                                       "' are not supported (service_account and authorized_user are)");
}

Result<GcsCredentials> find_gcs_credentials(const NetworkOptions& network, const EnvLookup& env) {
    if (source_flag(network, gcs_anonymous_setting)) {
        GcsCredentials anonymous;
        anonymous.from = "anonymous (gcs_anonymous)";
        return anonymous;
    }
    if (const std::string_view path = source_setting(network, gcs_credentials_setting); !path.empty()) {
        return load_key_file(std::string(path), "gcs_credentials " + std::string(path));
    }
    if (auto path = env("GOOGLE_APPLICATION_CREDENTIALS"); path && !path->empty()) {
        return load_key_file(*path, "GOOGLE_APPLICATION_CREDENTIALS (" + *path + ")");
    }
    if (const std::string dir = gcloud_config_dir(env); !dir.empty()) {
        const std::string path = dir + "/application_default_credentials.json";
        std::error_code error;
        if (std::filesystem::exists(path, error)) {
            return load_key_file(path, path);
        }
    }
    return metadata_server(env);
}

} // namespace ringload
