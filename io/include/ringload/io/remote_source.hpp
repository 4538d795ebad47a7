// io/include/ringload/io/remote_source.hpp
//
// A Source for any remote URI: http:// and https:// (HTTP/1.1 or HTTP/2), s3:// and redis://.
//
//     NetworkOptions network;
//     network.http_version = HttpVersion::http2;
//     RL_TRY(source, run_on_loop(loop, open_remote_source(loop, "http://10.0.0.5/m.tensors", network)));
// Thread: the loop thread.
#pragma once

#include "ringload/engine/source.hpp"
#include "ringload/io/network_options.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>
#include <string_view>

namespace ringload {

// http://, https://, s3:// or redis://.
bool is_remote_uri(std::string_view uri);

Task<Result<std::unique_ptr<Source>>> open_remote_source(asio::io_context& loop, std::string uri,
                                                         const NetworkOptions& options);

} // namespace ringload
