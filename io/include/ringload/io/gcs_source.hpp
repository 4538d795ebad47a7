// io/include/ringload/io/gcs_source.hpp
//
// A gs://bucket/object in Google Cloud Storage as a Source, and as where a finished file goes.
// Reads: the HTTP source (range GETs, retries, the validator pinned) on the JSON API's media URL
// {endpoint}/storage/v1/b/BUCKET/o/OBJECT?alt=media, each request carrying
// "Authorization: Bearer TOKEN" through HttpSourceOptions::sign_request (or nothing for anonymous
// access); GCS's JSON error bodies explained through HttpSourceOptions::explain_error. Writes: a
// resumable upload (chunks of 16 MiB, or NetworkOptions::range_size_bytes rounded up to a
// multiple of 256 KiB), which makes the object only when the last chunk is in: it appears whole
// or not at all, and a failed upload is cancelled.
//
//     RL_TRY(source, run_on_loop(loop, open_gcs_source(loop, "gs://models/gpt2.safetensors", network)));
//     RL_TRY(how, run_on_loop(loop, upload_gcs_object(loop, "/tmp/m.tensors", "gs://b/m.tensors", network)));
//     // how == "GCS resumable upload, 3 chunks of 16 MiB"
//
// The endpoint: the gcs_endpoint setting (NetworkOptions::source_settings), else
// STORAGE_EMULATOR_HOST ("http://host:port" or "host:port"), else https://storage.googleapis.com.
// Credentials, in the order of Google's libraries: gcs_anonymous; the gcs_credentials setting,
// else GOOGLE_APPLICATION_CREDENTIALS (a service account's JSON key, traded for tokens with a
// signed JWT, or a user's authorized_user JSON); gcloud's application_default_credentials.json;
// else the metadata server (GCE_METADATA_HOST), asked once with a short timeout, and anonymous
// when it does not answer. One access token per source, shared by its requests and replaced
// before it expires. Errors name the gs:// URI, the URL it went to and where the credentials
// came from; never a token, key or secret. Thread: the loop thread.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/io/network_options.hpp"

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace ringload {

inline constexpr std::size_t gcs_chunk_size_bytes_default = 16 << 20;
inline constexpr std::size_t gcs_chunk_granularity_bytes = 256 << 10; // GCS's rule for all chunks but the last

Task<Result<std::unique_ptr<Source>>> open_gcs_source(asio::io_context& loop, std::string uri, NetworkOptions network);

// Says how it went ("GCS resumable upload, 3 chunks of 16 MiB").
Task<Result<std::string>> upload_gcs_object(asio::io_context& loop, std::string local_path, std::string uri,
                                            NetworkOptions network);

// gs:// in the source registry (source_registry.hpp): reads, and publishing by upload_gcs_object.
struct SourceKind;
extern const SourceKind gcs_source;

} // namespace ringload
