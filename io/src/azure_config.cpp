// io/src/azure_config.cpp
#include "ringload/io/azure_config.hpp"

#include "ringload/io/azure_signer.hpp"
#include "ringload/io/sigv4.hpp" // sigv4_uri_encode: RFC 3986's unreserved set, as Azure's SDK encodes
#include "ringload/io/url.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace ringload {
namespace {

constexpr std::string_view blob_host_suffix = ".blob.core.windows.net";
constexpr std::string_view uri_form =
    "az://ACCOUNT/CONTAINER/BLOB or https://ACCOUNT.blob.core.windows.net/CONTAINER/BLOB";

// Azurite's account, whose key Microsoft publishes (UseDevelopmentStorage=true).
constexpr std::string_view development_account = "devstoreaccount1";
constexpr std::string_view development_key =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
constexpr std::string_view development_endpoint = "http://127.0.0.1:10000/devstoreaccount1";

std::string lowercase(std::string_view text) {
    std::string out(text);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

std::string trim(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) {
        return "";
    }
    return std::string(text.substr(first, text.find_last_not_of(" \t\r\n") - first + 1));
}

// "ACCOUNT.blob.core.windows.net", any case.
bool is_blob_host(std::string_view host) {
    const std::string lower = lowercase(host);
    return lower.size() > blob_host_suffix.size() && lower.ends_with(blob_host_suffix) &&
           lower.find('.') == lower.size() - blob_host_suffix.size();
}

// Storage account names are lowercase letters and digits (they are host name labels); the
// container and the blob must not be empty.
Result<AzureLocation> checked(AzureLocation location, std::string_view uri) {
    const auto lower_or_digit = [](unsigned char c) { return std::islower(c) != 0 || std::isdigit(c) != 0; };
    if (location.account.empty() || !std::all_of(location.account.begin(), location.account.end(), lower_or_digit)) {
        const std::string why = ": the account name must be lowercase letters and digits (";
        return fail(errc::invalid_argument, uri_for_messages(uri) + why + std::string(uri_form) + ")");
    }
    if (location.container.empty() || location.blob.empty()) {
        return fail(errc::invalid_argument,
                    uri_for_messages(uri) + ": no container or blob name (" + std::string(uri_form) + ")");
    }
    return location;
}

Result<AzureLocation> parse_az_uri(std::string_view uri) {
    const std::string_view rest = uri.substr(std::string_view("az://").size());
    const auto first = rest.find('/');
    const auto second = first == std::string_view::npos ? first : rest.find('/', first + 1);
    if (second == std::string_view::npos) {
        return fail(errc::invalid_argument, uri_for_messages(uri) + ": expected " + std::string(uri_form));
    }
    AzureLocation location;
    location.account = std::string(rest.substr(0, first));
    location.container = std::string(rest.substr(first + 1, second - first - 1));
    location.blob = std::string(rest.substr(second + 1));
    return checked(std::move(location), uri);
}

Result<AzureLocation> parse_blob_url(std::string_view uri) {
    RL_TRY(url, parse_http_url(uri));
    if (!is_blob_host(url.host)) {
        return fail(errc::invalid_argument, uri_for_messages(uri) + ": not a blob URL (" + std::string(uri_form) + ")");
    }
    const auto question = url.target.find('?');
    const std::string_view path =
        std::string_view(url.target).substr(1, question == std::string::npos ? question : question - 1);
    const auto slash = path.find('/');
    if (slash == std::string_view::npos) {
        return fail(errc::invalid_argument, uri_for_messages(uri) + ": expected " + std::string(uri_form));
    }
    AzureLocation location;
    location.account = lowercase(url.host.substr(0, url.host.find('.')));
    location.container = percent_decode(path.substr(0, slash));
    location.blob = percent_decode(path.substr(slash + 1));
    location.origin = url.scheme + "://" + url.host_header;
    location.query = question == std::string::npos ? "" : url.target.substr(question + 1);
    return checked(std::move(location), uri);
}

// What a connection string says, by its (case-insensitive) names; others (QueueEndpoint, ...)
// are not the blob service's.
struct ConnectionString {
    std::string from; // "option azure_connection_string" or "AZURE_STORAGE_CONNECTION_STRING"
    std::string account;
    std::string key;
    std::string sas;
    std::string blob_endpoint;
    std::string protocol;
    std::string suffix;
};

void set_field(ConnectionString& out, const std::string& name, std::string value, bool& development) {
    if (name == "accountname") {
        out.account = std::move(value);
    } else if (name == "accountkey") {
        out.key = std::move(value);
    } else if (name == "sharedaccesssignature") {
        out.sas = std::move(value);
    } else if (name == "blobendpoint") {
        out.blob_endpoint = std::move(value);
    } else if (name == "defaultendpointsprotocol") {
        out.protocol = lowercase(value);
    } else if (name == "endpointsuffix") {
        out.suffix = std::move(value);
    } else if (name == "usedevelopmentstorage") {
        development = lowercase(value) == "true";
    }
}

// "Name=value;Name=value;..." (values may hold '=': keys and SAS tokens do).
Result<ConnectionString> parse_connection_string(std::string_view text, std::string from) {
    ConnectionString out;
    out.from = std::move(from);
    bool development = false;
    while (!text.empty()) {
        const std::string_view part = text.substr(0, text.find(';'));
        text.remove_prefix(std::min(text.size(), part.size() + 1));
        if (trim(part).empty()) {
            continue;
        }
        const auto equals = part.find('=');
        if (equals == std::string_view::npos) {
            return fail(errc::invalid_argument,
                        out.from + ": not a connection string (expected Name=value;Name=value;...)");
        }
        set_field(out, lowercase(trim(part.substr(0, equals))), trim(part.substr(equals + 1)), development);
    }
    if (development && out.account.empty()) {
        out.account = development_account;
        out.key = out.key.empty() && out.sas.empty() ? std::string(development_key) : out.key;
        out.blob_endpoint = out.blob_endpoint.empty() ? std::string(development_endpoint) : out.blob_endpoint;
    }
    return out;
}

Result<std::optional<ConnectionString>> connection_string_of(const AzureSettings& settings, const EnvLookup& env) {
    if (!settings.connection_string.empty()) {
        return parse_connection_string(settings.connection_string, "option azure_connection_string");
    }
    const std::string text = env("AZURE_STORAGE_CONNECTION_STRING").value_or("");
    if (!text.empty()) {
        return parse_connection_string(text, "AZURE_STORAGE_CONNECTION_STRING");
    }
    return std::optional<ConnectionString>();
}

// A connection string for another account has that account's key and endpoint: never used.
Result<void> check_account(const ConnectionString& connection, std::string_view account) {
    if (!connection.account.empty() && connection.account != account) {
        return fail(errc::invalid_argument, connection.from + " is for account '" + connection.account +
                                                "', not the URI's '" + std::string(account) + "'");
    }
    return {};
}

Result<std::string> endpoint_of(const AzureSettings& settings, const AzureLocation& location,
                                const std::optional<ConnectionString>& connection) {
    std::string endpoint = "https://" + location.account + std::string(blob_host_suffix);
    std::string from = "the default endpoint";
    if (!settings.endpoint.empty()) {
        endpoint = settings.endpoint;
        from = "option azure_endpoint";
    } else if (!location.origin.empty()) {
        endpoint = location.origin;
    } else if (connection && !(connection->blob_endpoint + connection->protocol + connection->suffix).empty()) {
        RL_TRY_VOID(check_account(*connection, location.account));
        from = connection->from;
        endpoint = !connection->blob_endpoint.empty()
                       ? connection->blob_endpoint
                       : (connection->protocol.empty() ? "https" : connection->protocol) + "://" + location.account +
                             ".blob." + (connection->suffix.empty() ? "core.windows.net" : connection->suffix);
    }
    while (endpoint.ends_with('/')) {
        endpoint.pop_back();
    }
    auto url = parse_http_url(endpoint);
    if (!url || url->target.find('?') != std::string::npos) {
        return fail(errc::invalid_argument,
                    from + ": '" + uri_for_messages(endpoint) +
                        "' is not an http(s) endpoint URL (https://ACCOUNT.blob.core.windows.net, "
                        "http://127.0.0.1:10000/ACCOUNT)");
    }
    return endpoint;
}

bool has_signature(std::string_view query) {
    return query.starts_with("sig=") || query.find("&sig=") != std::string_view::npos;
}

Result<void> use_sas(AzureConfig& config, std::string_view sas, std::string from) {
    if (sas.starts_with('?')) {
        sas.remove_prefix(1);
    }
    if (!has_signature(sas)) {
        return fail(errc::invalid_argument, from + ": not a SAS token (it has no sig= parameter)");
    }
    config.auth = AzureAuth::sas;
    config.sas = std::string(sas);
    config.credentials_from = std::move(from);
    return {};
}

Result<void> use_key(AzureConfig& config, std::string_view key, std::string from) {
    auto decoded = azure_decode_key(trim(key));
    if (!decoded || decoded->empty()) {
        return fail(errc::invalid_argument, from + ": the account key is not base64");
    }
    config.auth = AzureAuth::shared_key;
    config.key = std::move(*decoded);
    config.credentials_from = std::move(from);
    return {};
}

// The environment's credentials, after the options' and the connection string's.
Result<void> environment_credentials(AzureConfig& config, const EnvLookup& env) {
    const std::string sas = env("AZURE_STORAGE_SAS_TOKEN").value_or("");
    if (!sas.empty()) {
        return use_sas(config, sas, "AZURE_STORAGE_SAS_TOKEN");
    }
    const std::string key = env("AZURE_STORAGE_KEY").value_or("");
    const std::string named = env("AZURE_STORAGE_ACCOUNT").value_or("");
    if (!key.empty() && (named.empty() || named == config.account)) {
        return use_key(config, key, "AZURE_STORAGE_KEY");
    }
    config.credentials_from =
        "none found, so anonymous (" +
        (key.empty() ? std::string() : "AZURE_STORAGE_KEY is for AZURE_STORAGE_ACCOUNT '" + named + "'; ") +
        "give azure_sas, azure_account_key, azure_connection_string or AZURE_STORAGE_CONNECTION_STRING)";
    return {};
}

Result<void> choose_credentials(AzureConfig& config, const AzureSettings& settings, const AzureLocation& location,
                                const std::optional<ConnectionString>& connection, const EnvLookup& env) {
    if (settings.anonymous) {
        config.credentials_from = "none (option azure_anonymous)";
        return {};
    }
    if (has_signature(location.query)) {
        config.auth = AzureAuth::sas; // the URL carries it: azure_blob_url keeps the query
        config.credentials_from = "the URL's SAS";
        return {};
    }
    if (!settings.sas.empty()) {
        return use_sas(config, settings.sas, "option azure_sas");
    }
    if (!settings.account_key.empty()) {
        return use_key(config, settings.account_key, "option azure_account_key");
    }
    if (connection && (!connection->key.empty() || !connection->sas.empty())) {
        RL_TRY_VOID(check_account(*connection, location.account));
        return connection->key.empty() ? use_sas(config, connection->sas, connection->from + " (SharedAccessSignature)")
                                       : use_key(config, connection->key, connection->from + " (AccountKey)");
    }
    return environment_credentials(config, env);
}

} // namespace

bool is_azure_uri(std::string_view uri) {
    if (uri.starts_with("az://")) {
        return true;
    }
    if (!uri.starts_with("https://") && !uri.starts_with("http://")) {
        return false;
    }
    auto url = parse_http_url(uri);
    return url && is_blob_host(url->host);
}

Result<AzureLocation> parse_azure_uri(std::string_view uri) {
    return uri.starts_with("az://") ? parse_az_uri(uri) : parse_blob_url(uri);
}

Result<AzureConfig> resolve_azure_config(const AzureSettings& settings, const AzureLocation& location,
                                         const EnvLookup& env) {
    RL_TRY(connection, connection_string_of(settings, env));
    AzureConfig config;
    config.account = location.account;
    RL_TRY(endpoint, endpoint_of(settings, location, connection));
    config.endpoint = std::move(endpoint);
    RL_TRY_VOID(choose_credentials(config, settings, location, connection, env));
    return config;
}

std::string azure_blob_url(const AzureConfig& config, const AzureLocation& location) {
    const std::string url = config.endpoint + "/" + sigv4_uri_encode(location.container, false) + "/" +
                            sigv4_uri_encode(location.blob, true);
    std::string query = location.query;
    if (!config.sas.empty()) {
        query += (query.empty() ? "" : "&") + config.sas;
    }
    return query.empty() ? url : url + "?" + query;
}

} // namespace ringload
