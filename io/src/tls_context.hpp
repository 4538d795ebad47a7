// io/src/tls_context.hpp
//
// The client TLS settings both HTTP versions use: the system's CAs plus the caller's (a PEM
// file, or a directory of hashed certificates as `c_rehash` makes), peer verification unless
// insecure.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"

#include <boost/asio/ssl/context.hpp>

#include <memory>
#include <string>

namespace ringload {

Result<std::unique_ptr<asio::ssl::context>> make_client_tls_context(const std::string& ca_path, bool insecure);

} // namespace ringload
