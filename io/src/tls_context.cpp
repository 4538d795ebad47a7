// io/src/tls_context.cpp
#include "tls_context.hpp"

#include <filesystem>

namespace ringload {

Result<std::unique_ptr<asio::ssl::context>> make_client_tls_context(const std::string& ca_path, bool insecure) {
    auto context = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
    boost::system::error_code ec;
    context->set_default_verify_paths(ec);
    if (!ca_path.empty()) {
        std::error_code kind_ec;
        if (std::filesystem::is_directory(ca_path, kind_ec)) {
            context->add_verify_path(ca_path, ec);
        } else {
            context->load_verify_file(ca_path, ec);
        }
        if (ec) {
            return fail(errc::invalid_argument, ca_path + ": cannot load CA certificates (PEM): " + ec.message());
        }
    }
    context->set_verify_mode(insecure ? asio::ssl::verify_none : asio::ssl::verify_peer);
    return context;
}

} // namespace ringload
