// io/src/azure_source.cpp
#include "ringload/io/azure_source.hpp"

#include "ringload/io/azure_signer.hpp"
#include "ringload/io/s3_xml.hpp"
#include "ringload/io/source_registry.hpp"

#include <array>

namespace ringload {
namespace {

// The HTTP source's signing hook for Azure: x-ms-version always; with an account key also
// x-ms-date and Shared Key's Authorization, which covers the Range the request sends.
Task<Result<std::vector<HttpSourceOptions::Header>>> sign_azure_get(std::shared_ptr<const AzureConfig> config, Url url,
                                                                    std::string method, std::string range) {
    std::vector<AzureHeader> sent;
    if (!range.empty()) {
        sent.emplace_back("Range", std::move(range));
    }
    co_return azure_request_headers(*config, url, method, sent);
}

// The HTTP source's error-body hook: Azure's "Code: Message", and for a 403 what to check
// with the credentials in use.
std::string explain_azure_error(AzureAuth auth, unsigned status, std::string_view body) {
    std::string why = azure_error_summary(body);
    if (status == 403) {
        const char* hint = auth == AzureAuth::shared_key ? "is the account key this account's?"
                           : auth == AzureAuth::sas ? "has the SAS expired, or does it lack read permission (sp=r)?"
                                                    : "the container allows no anonymous reads: give credentials";
        why += std::string(why.empty() ? "" : "; ") + hint;
    }
    return why;
}

// An error of the HTTP source as the user should see it: the URI as given first, the URL
// without its query (the SAS, already redacted, says nothing useful), where the credentials
// came from last.
Error described(Error error, const std::string& shown_uri, const std::string& url,
                const std::string& credentials_from) {
    auto parsed = parse_http_url(url);
    const std::string with_query = uri_for_messages(parsed ? parsed->text() : url);
    const std::string without_query = with_query.substr(0, with_query.find('?'));
    for (auto at = error.detail.find(with_query); with_query != without_query && at != std::string::npos;
         at = error.detail.find(with_query, at + without_query.size())) {
        error.detail.replace(at, with_query.size(), without_query);
    }
    error = with_context(std::move(error), shown_uri);
    error.detail += " (credentials: " + credentials_from + ")";
    return error;
}

AzureSettings azure_settings_of(const NetworkOptions& network) {
    AzureSettings settings;
    settings.endpoint = std::string(source_setting(network, "azure_endpoint"));
    settings.sas = std::string(source_setting(network, "azure_sas"));
    settings.account_key = std::string(source_setting(network, "azure_account_key"));
    settings.connection_string = std::string(source_setting(network, "azure_connection_string"));
    settings.anonymous = source_flag(network, "azure_anonymous");
    return settings;
}

Task<Result<std::unique_ptr<Source>>> open_azure_uri(asio::io_context& loop, std::string uri,
                                                     const NetworkOptions& network) {
    auto opening = open_azure_source(loop, std::move(uri), azure_settings_of(network), http_source_options(network));
    co_return co_await std::move(opening);
}

constexpr std::array azure_options{
    SourceOption{"azure_endpoint",
                 "az://: the blob service's URL, e.g. http://127.0.0.1:10000/ACCOUNT (default: the "
                 "connection string's, else https://ACCOUNT.blob.core.windows.net)"},
    SourceOption{"azure_sas", "az://: a SAS token for the blob or its container (default: AZURE_STORAGE_SAS_TOKEN)"},
    SourceOption{"azure_account_key",
                 "az://: the storage account's key, for Shared Key signing (default: "
                 "AZURE_STORAGE_KEY)"},
    SourceOption{"azure_connection_string",
                 "az://: a storage connection string (default: "
                 "AZURE_STORAGE_CONNECTION_STRING)"},
    SourceOption{"azure_anonymous", "az://: unsigned requests (public containers), whatever credentials exist", true},
};

} // namespace

const SourceKind azure_source{
    .name = "azure",
    .uri_forms = "az://ACCOUNT/CONTAINER/BLOB, https://ACCOUNT.blob.core.windows.net/CONTAINER/BLOB",
    .handles = is_azure_uri,
    .options = azure_options,
    .open = open_azure_uri,
    .publish = nullptr,
};

std::string azure_error_summary(std::string_view body) {
    if (body.find("<Error>") == std::string_view::npos) {
        return "";
    }
    const std::string code = s3_xml_text(body, "Code");
    std::string message = s3_xml_text(body, "Message");
    message = message.substr(0, message.find_first_of("\r\n")); // then RequestId:... and Time:...
    if (code.empty() || message.empty()) {
        return code + message;
    }
    return code + ": " + message;
}

Task<Result<std::unique_ptr<Source>>> open_azure_source(asio::io_context& loop, std::string uri, AzureSettings settings,
                                                        HttpSourceOptions http) {
    // A blob URL's query (a SAS URL's) is left out of messages; an az:// blob name may hold '?'.
    std::string shown_uri = uri_for_messages(uri);
    if (!uri.starts_with("az://")) {
        shown_uri = shown_uri.substr(0, shown_uri.find('?'));
    }
    RL_CO_TRY(location, parse_azure_uri(uri));
    auto resolved = resolve_azure_config(settings, location, process_environment());
    if (!resolved) {
        co_return with_context(resolved.error(), shown_uri);
    }
    auto config = std::make_shared<const AzureConfig>(std::move(*resolved));
    const std::string url = azure_blob_url(*config, location);
    http.sign_request = [config](Url target, std::string method, std::string range) {
        return sign_azure_get(config, std::move(target), std::move(method), std::move(range));
    };
    http.explain_error = [auth = config->auth](unsigned status, std::string_view body) {
        return explain_azure_error(auth, status, body);
    };
    // HTTP/1.1: Blob Storage does not speak HTTP/2, and only HTTP/1.1 reads refusals' bodies.
    auto opening = open_http_source(loop, url, std::move(http));
    auto opened = co_await std::move(opening);
    if (!opened) {
        co_return described(opened.error(), shown_uri, url, config->credentials_from);
    }
    co_return std::move(*opened);
}

} // namespace ringload
