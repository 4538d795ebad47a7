// io/include/ringload/io/s3_source.hpp
//
// An s3://bucket/key object as a Source: the HTTP source (range GETs, retries, the validator
// pinned) on the object's URL at the endpoint that resolve_s3_config finds, each request signed
// with SigV4 through HttpSourceOptions::sign_request (or unsigned for anonymous access); S3's
// XML error bodies explained through HttpSourceOptions::explain_error.
//
//     RL_TRY(source, run_on_loop(loop, open_s3_source(loop, "s3://models/gpt2.tensors", s3, http)));
//
// Errors name the s3:// URI, the URL it went to and where the credentials came from; never a
// secret. Thread: the loop thread.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/io/http_source.hpp"
#include "ringload/io/network_options.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>

namespace ringload {

Task<Result<std::unique_ptr<Source>>> open_s3_source(asio::io_context& loop, std::string uri, S3Options s3,
                                                     HttpSourceOptions http);

// s3:// in the source registry (source_registry.hpp): reads, and publishing by upload_s3_object.
struct SourceKind;
extern const SourceKind s3_source;

} // namespace ringload
