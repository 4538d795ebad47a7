// io/src/s3_config.cpp
#include "ringload/io/s3_config.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>

namespace ringload {
namespace {

// One INI-style file as AWS's tools and s3cmd write it: [section], `key = value`, comments
// starting with # or ;. Indented lines after `key =` (AWS's nested settings, e.g. `s3 =`) belong
// to that key and are skipped, so that they never override a top-level value.
using IniFile = std::map<std::string, std::map<std::string, std::string>>;

std::string trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) {
        return "";
    }
    const auto last = text.find_last_not_of(" \t\r");
    return std::string(text.substr(first, last - first + 1));
}

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

std::optional<IniFile> read_ini(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        return std::nullopt;
    }
    IniFile file;
    std::map<std::string, std::string>* section = nullptr;
    std::string line;
    while (std::getline(in, line)) {
        const std::string text = trim(line);
        if (text.empty() || text[0] == '#' || text[0] == ';') {
            continue;
        }
        if (line[0] == ' ' || line[0] == '\t') {
            continue; // a nested setting (or a continuation): not one of ours
        }
        if (text.front() == '[' && text.back() == ']') {
            section = &file[trim(std::string_view(text).substr(1, text.size() - 2))];
            continue;
        }
        const auto equals = text.find_first_of("=:");
        if (section != nullptr && equals != std::string::npos) {
            (*section)[lowercase(trim(std::string_view(text).substr(0, equals)))] =
                trim(std::string_view(text).substr(equals + 1));
        }
    }
    return file;
}

std::string value_of(const std::map<std::string, std::string>* section, const std::string& key) {
    if (section == nullptr) {
        return "";
    }
    auto it = section->find(key);
    return it == section->end() ? "" : it->second;
}

std::string env_or_empty(const EnvLookup& env, const std::string& name) {
    return env(name).value_or("");
}

// The profile's sections in ~/.aws/credentials ([NAME]) and ~/.aws/config ([profile NAME],
// or [default] for the default profile).
struct Profile {
    std::string name;
    bool named = false; // by S3Options or AWS_PROFILE: then it must exist
    std::string credentials_path;
    std::string config_path;
    std::optional<IniFile> credentials_file;
    std::optional<IniFile> config_file;
    const std::map<std::string, std::string>* credentials = nullptr;
    const std::map<std::string, std::string>* config = nullptr;

    std::string setting(const std::string& key) const {
        std::string value = value_of(credentials, key);
        return value.empty() ? value_of(config, key) : value;
    }
};

Profile load_profile(const S3Options& options, const EnvLookup& env, const std::string& home) {
    Profile profile;
    profile.name = options.profile;
    profile.named = !profile.name.empty();
    if (profile.name.empty()) {
        profile.name = env_or_empty(env, "AWS_PROFILE");
        profile.named = !profile.name.empty();
    }
    if (profile.name.empty()) {
        profile.name = "default";
    }
    profile.credentials_path = env_or_empty(env, "AWS_SHARED_CREDENTIALS_FILE");
    if (profile.credentials_path.empty() && !home.empty()) {
        profile.credentials_path = home + "/.aws/credentials";
    }
    profile.config_path = env_or_empty(env, "AWS_CONFIG_FILE");
    if (profile.config_path.empty() && !home.empty()) {
        profile.config_path = home + "/.aws/config";
    }
    if (!profile.credentials_path.empty()) {
        profile.credentials_file = read_ini(profile.credentials_path);
    }
    if (!profile.config_path.empty()) {
        profile.config_file = read_ini(profile.config_path);
    }
    if (profile.credentials_file) {
        auto it = profile.credentials_file->find(profile.name);
        if (it != profile.credentials_file->end()) {
            profile.credentials = &it->second;
        }
    }
    if (profile.config_file) {
        for (const std::string& section : {"profile " + profile.name, profile.name == "default" ? profile.name : ""}) {
            auto it = profile.config_file->find(section);
            if (!section.empty() && it != profile.config_file->end()) {
                profile.config = &it->second;
                break;
            }
        }
    }
    return profile;
}

// ~/.s3cfg's [default] section (s3cmd's file, which tensorizer reads too).
struct S3cmdConfig {
    std::string path;
    std::optional<IniFile> file;
    const std::map<std::string, std::string>* section = nullptr;
};

S3cmdConfig load_s3cmd_config(const std::string& home) {
    S3cmdConfig config;
    if (home.empty()) {
        return config;
    }
    config.path = home + "/.s3cfg";
    config.file = read_ini(config.path);
    if (config.file) {
        auto it = config.file->find("default");
        if (it != config.file->end()) {
            config.section = &it->second;
        }
    }
    return config;
}

bool is_false(std::string text) {
    text = lowercase(std::move(text));
    return text == "false" || text == "no" || text == "off" || text == "0";
}

// "host:9000" -> "https://host:9000"; trailing slashes dropped.
std::string normalized_endpoint(std::string endpoint, const std::string& default_scheme) {
    while (!endpoint.empty() && endpoint.back() == '/') {
        endpoint.pop_back();
    }
    if (endpoint.find("://") == std::string::npos) {
        endpoint = default_scheme + "://" + endpoint;
    }
    return endpoint;
}

// Letters, digits and hyphens, 3 to 63 of them, lowercase: a bucket that can be a host name
// label (with dots it would not match AWS's wildcard certificate).
bool dns_safe_bucket(std::string_view bucket) {
    return bucket.size() >= 3 && bucket.size() <= 63 && bucket.front() != '-' && bucket.back() != '-' &&
           std::all_of(bucket.begin(), bucket.end(),
                       [](unsigned char c) { return std::islower(c) != 0 || std::isdigit(c) != 0 || c == '-'; });
}

std::string host_of(const std::string& endpoint) {
    std::string_view rest(endpoint);
    rest.remove_prefix(rest.find("://") + 3);
    rest = rest.substr(0, rest.find('/'));
    if (!rest.empty() && rest.front() == '[') {
        return std::string(rest.substr(0, rest.find(']') + 1));
    }
    return std::string(rest.substr(0, rest.rfind(':')));
}

Result<void> resolve_credentials(S3Config& config, const S3Options& options, const EnvLookup& env,
                                 const Profile& profile, const S3cmdConfig& s3cmd) {
    if (options.anonymous) {
        config.anonymous = true;
        config.credentials_from = "anonymous (as asked)";
        return {};
    }
    if (!options.access_key_id.empty() || !options.secret_access_key.empty()) {
        if (options.access_key_id.empty() || options.secret_access_key.empty()) {
            return fail(errc::invalid_argument,
                        "S3 options: an access key id needs its secret access key and the "
                        "other way round (only one was given)");
        }
        config.credentials = {options.access_key_id, options.secret_access_key, options.session_token};
        config.credentials_from = "S3 options";
        return {};
    }
    const std::string env_key = env_or_empty(env, "AWS_ACCESS_KEY_ID");
    const std::string env_secret = env_or_empty(env, "AWS_SECRET_ACCESS_KEY");
    if (!env_key.empty() || !env_secret.empty()) {
        if (env_key.empty() || env_secret.empty()) {
            return fail(errc::invalid_argument, std::string("environment: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
                                                            "go together, but only ") +
                                                    (env_key.empty() ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID") +
                                                    " is set");
        }
        config.credentials = {env_key, env_secret, env_or_empty(env, "AWS_SESSION_TOKEN")};
        config.credentials_from = "environment (AWS_ACCESS_KEY_ID)";
        return {};
    }
    if (profile.named && profile.credentials == nullptr && profile.config == nullptr) {
        return fail(errc::invalid_argument,
                    "AWS profile '" + profile.name + "' is in neither " +
                        (profile.credentials_path.empty() ? "~/.aws/credentials" : profile.credentials_path) + " nor " +
                        (profile.config_path.empty() ? "~/.aws/config" : profile.config_path));
    }
    const std::string profile_key = profile.setting("aws_access_key_id");
    const std::string profile_secret = profile.setting("aws_secret_access_key");
    if (!profile_key.empty() || !profile_secret.empty()) {
        const std::string where =
            value_of(profile.credentials, "aws_access_key_id").empty() ? profile.config_path : profile.credentials_path;
        if (profile_key.empty() || profile_secret.empty()) {
            return fail(errc::invalid_argument,
                        where + ": profile '" + profile.name + "' has " +
                            (profile_key.empty() ? "aws_secret_access_key" : "aws_access_key_id") +
                            " without its other half");
        }
        config.credentials = {profile_key, profile_secret, profile.setting("aws_session_token")};
        config.credentials_from = "profile " + profile.name + " in " + where;
        return {};
    }
    const std::string s3cmd_key = value_of(s3cmd.section, "access_key");
    const std::string s3cmd_secret = value_of(s3cmd.section, "secret_key");
    if (!s3cmd_key.empty() && !s3cmd_secret.empty()) {
        config.credentials = {s3cmd_key, s3cmd_secret, value_of(s3cmd.section, "access_token")};
        config.credentials_from = s3cmd.path;
        return {};
    }
    config.anonymous = true;
    config.credentials_from = "anonymous (no credentials found)";
    return {};
}

} // namespace

Result<S3Location> parse_s3_uri(std::string_view uri) {
    if (!uri.starts_with("s3://")) {
        return fail(errc::invalid_argument, std::string(uri) + ": not an s3:// URI");
    }
    std::string_view rest = uri.substr(5);
    const auto slash = rest.find('/');
    if (slash == 0 || rest.empty()) {
        return fail(errc::invalid_argument, std::string(uri) + ": no bucket (s3://BUCKET/KEY)");
    }
    if (slash == std::string_view::npos || slash + 1 == rest.size()) {
        return fail(errc::invalid_argument, std::string(uri) + ": no key after the bucket (s3://BUCKET/KEY)");
    }
    return S3Location{std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))};
}

EnvLookup process_environment() {
    return [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr) {
            return std::nullopt;
        }
        return std::string(value);
    };
}

Result<S3Config> resolve_s3_config(const S3Options& options, const EnvLookup& env, std::string_view bucket) {
    const std::string home = env_or_empty(env, "HOME");
    const Profile profile = load_profile(options, env, home);
    const S3cmdConfig s3cmd = load_s3cmd_config(home);

    S3Config config;
    RL_TRY_VOID(resolve_credentials(config, options, env, profile, s3cmd));

    for (const std::string& region : {options.region, env_or_empty(env, "AWS_REGION"),
                                      env_or_empty(env, "AWS_DEFAULT_REGION"), profile.setting("region")}) {
        if (!region.empty()) {
            config.region = region;
            break;
        }
    }
    if (config.region.empty()) {
        config.region = "us-east-1";
    }

    if (!options.endpoint.empty()) {
        config.endpoint = normalized_endpoint(options.endpoint, "https");
    } else if (auto s3_url = env_or_empty(env, "AWS_ENDPOINT_URL_S3"); !s3_url.empty()) {
        config.endpoint = normalized_endpoint(s3_url, "https");
    } else if (auto any_url = env_or_empty(env, "AWS_ENDPOINT_URL"); !any_url.empty()) {
        config.endpoint = normalized_endpoint(any_url, "https");
    } else if (auto host_base = value_of(s3cmd.section, "host_base"); !host_base.empty()) {
        config.endpoint =
            normalized_endpoint(host_base, is_false(value_of(s3cmd.section, "use_https")) ? "http" : "https");
    } else {
        config.endpoint = "https://s3." + config.region + ".amazonaws.com";
    }
    if (!config.endpoint.starts_with("http://") && !config.endpoint.starts_with("https://")) {
        return fail(errc::invalid_argument, config.endpoint + ": an S3 endpoint must be http:// or https://");
    }

    switch (options.addressing) {
        case S3Addressing::path:
            config.path_style = true;
            break;
        case S3Addressing::virtual_host:
            config.path_style = false;
            break;
        case S3Addressing::automatic:
            config.path_style = !(host_of(config.endpoint).ends_with(".amazonaws.com") && dns_safe_bucket(bucket));
            break;
    }
    return config;
}

std::string s3_object_url(const S3Config& config, const S3Location& location) {
    const auto authority_start = config.endpoint.find("://") + 3;
    const auto path_start = config.endpoint.find('/', authority_start);
    const std::string origin = config.endpoint.substr(0, path_start);
    const std::string base = path_start == std::string::npos ? "" : config.endpoint.substr(path_start);
    const std::string key = sigv4_uri_encode(location.key, true);
    if (config.path_style) {
        return origin + base + "/" + sigv4_uri_encode(location.bucket, false) + "/" + key;
    }
    return origin.substr(0, authority_start) + location.bucket + "." + origin.substr(authority_start) + base + "/" +
           key;
}

std::string percent_decode(std::string_view text) {
    auto digit = [](char c) -> int {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    };
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '%' && i + 2 < text.size() && digit(text[i + 1]) >= 0 && digit(text[i + 2]) >= 0) {
            out += static_cast<char>(digit(text[i + 1]) * 16 + digit(text[i + 2]));
            i += 2;
        } else {
            out += text[i];
        }
    }
    return out;
}

} // namespace ringload
