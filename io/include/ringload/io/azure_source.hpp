// io/include/ringload/io/azure_source.hpp
//
// An Azure blob, az://ACCOUNT/CONTAINER/BLOB or https://ACCOUNT.blob.core.windows.net/CONTAINER/BLOB,
// as a Source: the HTTP source (range GETs, retries, the ETag pinned) on the blob's URL at the
// endpoint that resolve_azure_config finds, each request given x-ms-version and, with an account
// key, signed with Shared Key through HttpSourceOptions::sign_request (its Range included); a SAS
// travels in the URL's query. Azure's XML error bodies are explained through
// HttpSourceOptions::explain_error. Reads only.
//
//     RL_TRY(source, run_on_loop(loop, open_azure_source(loop, "az://acct/models/gpt2.tensors", settings, http)));
//
// Errors name the URI as given, the URL without its query and where the credentials came from;
// never a key or a SAS. HTTP/1.1 only: Blob Storage speaks no HTTP/2. Thread: the loop thread.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/io/azure_config.hpp"
#include "ringload/io/http_source.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace ringload {

Task<Result<std::unique_ptr<Source>>> open_azure_source(asio::io_context& loop, std::string uri, AzureSettings settings,
                                                        HttpSourceOptions http);

// "AuthenticationFailed: Server failed to authenticate the request..." from Azure's
// <Error><Code>..</Code><Message>..</Message></Error>: the message's first line only (the rest
// is the request id and time), never the AuthenticationErrorDetail (it quotes the signature).
// "" when `body` is no such document.
std::string azure_error_summary(std::string_view body);

// az:// and Azure's blob URLs in the source registry (source_registry.hpp): options
// azure_endpoint, azure_sas, azure_account_key, azure_connection_string, azure_anonymous.
struct SourceKind;
extern const SourceKind azure_source;

} // namespace ringload
