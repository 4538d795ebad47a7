// io/src/asio_ssl_impl.cpp
//
// Asio's OpenSSL glue, compiled once (BOOST_ASIO_SEPARATE_COMPILATION), here in io/ so that
// only the network sources link libssl.
#include <boost/asio/ssl/impl/src.hpp>
