// io/src/tls_context.hpp
//
// The one client TLS context builder, for HTTP/1.1, HTTP/2 and the S3 uploads: the system's CAs
// plus the caller's (a PEM file, or a directory of hashed certificates as `c_rehash` makes),
// peer verification unless insecure. connect.hpp does the per-connection part (SNI, ALPN, the
// host name check).
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <string>

namespace ringload {

Result<std::unique_ptr<asio::ssl::context>> make_client_tls_context(const std::string& ca_path, bool insecure);

} // namespace ringload
