// tests/io/tls_context_test.cpp
//
// The one client TLS context builder (io/src/tls_context.hpp): --ca-file as a PEM file or as a
// directory of hashed certificates, and a clear error for neither. And that the S3 upload uses
// it: before there was one builder, an upload with --ca-file DIR failed with "cannot load CA
// certificates" while reads of the same endpoint worked.
#include "tls_context.hpp"

#include "ringload/io/s3_upload.hpp"

#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>

#include <fstream>

namespace ringload {
namespace {

using testing::TempDir;

TEST(TlsContext, SystemStoreAloneAndInsecure) {
    auto verified = make_client_tls_context("", false);
    ASSERT_TRUE(verified) << verified.error().message();
    EXPECT_EQ(::SSL_CTX_get_verify_mode((*verified)->native_handle()), SSL_VERIFY_PEER);
    auto insecure = make_client_tls_context("", true);
    ASSERT_TRUE(insecure);
    EXPECT_EQ(::SSL_CTX_get_verify_mode((*insecure)->native_handle()), SSL_VERIFY_NONE);
}

TEST(TlsContext, CaDirectoryIsAccepted) {
    TempDir dir; // a c_rehash directory; empty is still a directory to look in
    auto context = make_client_tls_context(dir.path().string(), false);
    ASSERT_TRUE(context) << context.error().message();
}

TEST(TlsContext, NotPemIsAnErrorNamingTheFile) {
    TempDir dir;
    const auto path = dir.path() / "not.pem";
    std::ofstream(path) << "not a certificate\n";
    auto garbage = make_client_tls_context(path.string(), false);
    ASSERT_FALSE(garbage);
    EXPECT_EQ(garbage.error().code, errc::invalid_argument);
    EXPECT_NE(garbage.error().detail.find(path.string() + ": cannot load CA certificates"), std::string::npos);
    auto missing = make_client_tls_context((dir.path() / "missing.pem").string(), false);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, errc::invalid_argument);
}

TEST(TlsContext, S3UploadTakesACaDirectory) {
    TempDir dir;
    const auto file = dir.path() / "m.bin";
    std::ofstream(file) << "bytes";
    NetworkOptions options;
    options.ca_file = dir.path().string();
    options.attempts = 1;
    options.timeout_seconds = 5;
    options.s3.endpoint = "https://127.0.0.1:1"; // nothing listens: the upload gets as far as connecting
    options.s3.region = "us-east-1";
    options.s3.access_key_id = "AKIDEXAMPLE";
    options.s3.secret_access_key = "secret";
    boost::asio::io_context loop;
    auto uploading = upload_s3_object(loop, file.string(), "s3://bucket/m.bin", options);
    auto uploaded = testing::run_to_completion(loop, std::move(uploading));
    ASSERT_FALSE(uploaded);
    EXPECT_EQ(uploaded.error().detail.find("cannot load CA certificates"), std::string::npos)
        << uploaded.error().detail;
    EXPECT_NE(uploaded.error().detail.find("cannot connect to 127.0.0.1:1"), std::string::npos)
        << uploaded.error().detail;
}

} // namespace
} // namespace ringload
