// io/include/ringload/io/azure_config.hpp
//
// Where an Azure blob is and how to authorise reading it: the account, container and blob of an
// az://ACCOUNT/CONTAINER/BLOB URI or an https://ACCOUNT.blob.core.windows.net/CONTAINER/BLOB URL,
// then the endpoint and credentials from the azure_* source options and the environment that
// Azure's own tools read.
//
//     RL_TRY(location, parse_azure_uri("az://acct/models/llama/model.safetensors"));
//     RL_TRY(config, resolve_azure_config(settings, location, process_environment()));
//     std::string url = azure_blob_url(config, location); // "https://acct.blob.core.windows.net/models/..."
//
// Credentials: the first of these that is given.
//   azure_anonymous           none at all: unsigned requests (public containers)
//   the URL's own query       a SAS URL as the portal hands it out (https://...?sv=...&sig=...)
//   azure_sas                 a SAS token, appended to the URL's query
//   azure_account_key         the account key (base64): Shared Key signing
//   azure_connection_string, else AZURE_STORAGE_CONNECTION_STRING: its AccountKey, else its
//                             SharedAccessSignature (UseDevelopmentStorage=true: Azurite's
//                             well-known account)
//   AZURE_STORAGE_SAS_TOKEN
//   AZURE_STORAGE_KEY         the key of AZURE_STORAGE_ACCOUNT (azure-cli's names), when that is
//                             unset or names the URI's account
//   else anonymous, which error messages say.
// Endpoint: azure_endpoint; else an https:// URL's own scheme and host; else the connection
// string's BlobEndpoint, or DefaultEndpointsProtocol://ACCOUNT.blob.EndpointSuffix; else
// https://ACCOUNT.blob.core.windows.net. An endpoint may end in a path: an emulator's
// path-style http://127.0.0.1:10000/ACCOUNT (Azurite's form).
// A connection string that names another account than the URI is an error. Messages name
// settings and variables, never a key or a SAS.
#pragma once

#include "ringload/error.hpp"
#include "ringload/io/s3_config.hpp" // EnvLookup, process_environment

#include <cstdint>
#include <string>
#include <string_view>

namespace ringload {

struct AzureLocation {
    std::string account;
    std::string container;
    std::string blob;   // unencoded ("dir/model 1.safetensors")
    std::string origin; // an https:// URL's "https://acct.blob.core.windows.net"; "" for az://
    std::string query;  // an https:// URL's query without '?' (a SAS, snapshot=...); "" for none
};

// az://ACCOUNT/CONTAINER/BLOB (the blob as given), or an http(s) URL on ACCOUNT.blob.core.windows.net
// (its path percent-decoded).
Result<AzureLocation> parse_azure_uri(std::string_view uri);

// Whether parse_azure_uri takes `uri`: az://, or an http(s) URL on a *.blob.core.windows.net host.
bool is_azure_uri(std::string_view uri);

// The azure_* source options (source_registry.hpp), parsed.
struct AzureSettings {
    std::string endpoint;
    std::string sas;
    std::string account_key;
    std::string connection_string;
    bool anonymous = false;
};

enum class AzureAuth : std::uint8_t { anonymous, sas, shared_key };

struct AzureConfig {
    AzureAuth auth = AzureAuth::anonymous;
    std::string account;
    std::string key;              // shared_key: the account key, base64-decoded
    std::string sas;              // sas: the token appended to the URL, without '?' ("" when the URL has it)
    std::string endpoint;         // "https://acct.blob.core.windows.net" or "http://127.0.0.1:10000/acct"
    std::string credentials_from; // "option azure_sas", "AZURE_STORAGE_CONNECTION_STRING", ...
};

// Resolves the order above.
Result<AzureConfig> resolve_azure_config(const AzureSettings& settings, const AzureLocation& location,
                                         const EnvLookup& env);

// The blob's URL: the endpoint, the container and the blob percent-encoded once (as Azure's SDK
// does: '/' and RFC 3986's unreserved characters kept), then the URL's own query and the SAS.
std::string azure_blob_url(const AzureConfig& config, const AzureLocation& location);

} // namespace ringload
