// engine/src/asio_impl.cpp
//
// Asio is compiled once, here (BOOST_ASIO_SEPARATE_COMPILATION), with io_uring for files.
#include <boost/asio/impl/src.hpp>
