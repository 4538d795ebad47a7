// tests/io/sigv4_test.cpp
//
// The SigV4 signer against signatures AWS publishes: the S3 GetObject example of the S3 API
// reference ("Signature Calculations for the Authorization Header", GET /test.txt with a
// Range, example keys) and the get-vanilla-query-order-key-case case of the SigV4 test suite.
// (botocore's signer on the same requests comes with the S3 source, issue #4.)
#include "ringload/io/sigv4.hpp"

#include <gtest/gtest.h>

namespace ringload {
namespace {

const std::string empty_sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

TEST(SigV4, MatchesTheS3ApiReferenceGetObjectExample) {
    SigV4Request request{"GET",
                         "/test.txt",
                         {},
                         {{"Host", "examplebucket.s3.amazonaws.com"},
                          {"Range", "bytes=0-9"},
                          {"x-amz-content-sha256", empty_sha256},
                          {"x-amz-date", "20130524T000000Z"}},
                         empty_sha256};
    EXPECT_EQ(sigv4_canonical_request(request),
              "GET\n/test.txt\n\nhost:examplebucket.s3.amazonaws.com\n"
              "range:bytes=0-9\nx-amz-content-sha256:" +
                  empty_sha256 +
                  "\nx-amz-date:20130524T000000Z\n\n"
                  "host;range;x-amz-content-sha256;x-amz-date\n" +
                  empty_sha256);
    EXPECT_EQ(sigv4_string_to_sign(request, "us-east-1", "s3", "20130524T000000Z"),
              "AWS4-HMAC-SHA256\n20130524T000000Z\n20130524/us-east-1/s3/aws4_request\n"
              "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972");
    SigV4Credentials credentials{"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", ""};
    EXPECT_EQ(sigv4_authorization(request, credentials, "us-east-1", "s3", "20130524T000000Z"),
              "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
              "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
              "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
}

TEST(SigV4, MatchesTheTestSuitesQueryOrderCase) {
    SigV4Request request{"GET",
                         "/",
                         {{"Param2", "value2"}, {"Param1", "value1"}},
                         {{"Host", "example.amazonaws.com"}, {"X-Amz-Date", "20150830T123600Z"}},
                         empty_sha256};
    SigV4Credentials credentials{"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", ""};
    EXPECT_EQ(sigv4_authorization(request, credentials, "us-east-1", "service", "20150830T123600Z"),
              "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
              "SignedHeaders=host;x-amz-date, "
              "Signature=b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST(SigV4, EncodesPathsOnceAndQueriesFully) {
    EXPECT_EQ(sigv4_uri_encode("/models/a b+c~d.tensors", true), "/models/a%20b%2Bc~d.tensors");
    EXPECT_EQ(sigv4_uri_encode("a/b=c&d", false), "a%2Fb%3Dc%26d");
    SigV4Request request{"GET", "/b/k", {{"b", "2"}, {"a", "x y"}, {"a", "1"}}, {{"host", "h"}}, "UNSIGNED-PAYLOAD"};
    EXPECT_EQ(sigv4_canonical_request(request), "GET\n/b/k\na=1&a=x%20y&b=2\nhost:h\n\nhost\nUNSIGNED-PAYLOAD");
}

} // namespace
} // namespace ringload
