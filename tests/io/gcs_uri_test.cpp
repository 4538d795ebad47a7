// tests/io/gcs_uri_test.cpp
//
// gs:// URIs (io/src/gcs_uri.hpp): bucket and object apart, bucket names checked, nothing
// decoded; the JSON API's URLs with the object percent-encoded once ('/' too); the endpoint from
// the setting, STORAGE_EMULATOR_HOST (with or without http://) or the default. And what GCS's
// and OAuth's JSON error bodies say (io/src/gcs_error.hpp).
#include "gcs_uri.hpp"
#include "gcs_error.hpp"

#include <gtest/gtest.h>

#include <map>

namespace ringload {
namespace {

EnvLookup env_of(std::map<std::string, std::string> values) {
    return [values = std::move(values)](const std::string& name) -> std::optional<std::string> {
        const auto found = values.find(name);
        return found == values.end() ? std::nullopt : std::optional<std::string>(found->second);
    };
}

TEST(GcsUri, BucketAndObjectApartNothingDecoded) {
    auto plain = parse_gcs_uri("gs://models/llama/model.safetensors");
    ASSERT_TRUE(plain) << plain.error().detail;
    EXPECT_EQ(plain->bucket, "models");
    EXPECT_EQ(plain->object, "llama/model.safetensors");
    auto odd = parse_gcs_uri("gs://my_bucket.example-1/dir with space/a%20b?c#d");
    ASSERT_TRUE(odd) << odd.error().detail;
    EXPECT_EQ(odd->bucket, "my_bucket.example-1");
    EXPECT_EQ(odd->object, "dir with space/a%20b?c#d");
}

TEST(GcsUri, RefusesWhatNamesNoObject) {
    for (const char* uri :
         {"gs://models", "gs://models/", "s3://models/a", "gs://Models/a", "gs://ab/a", "gs://-models/a",
          "gs://models-/a", "gs://mo dels/a", "gs://models/.", "gs://models/..", "gs://models/a\nb"}) {
        auto parsed = parse_gcs_uri(uri);
        EXPECT_FALSE(parsed) << uri;
        if (!parsed) {
            EXPECT_EQ(parsed.error().code, errc::invalid_argument) << uri;
        }
    }
    EXPECT_FALSE(parse_gcs_uri("gs://models/" + std::string(1025, 'x')));
    EXPECT_TRUE(parse_gcs_uri("gs://models/" + std::string(1024, 'x')));
}

TEST(GcsUri, UrlsEncodeTheObjectOnceSlashesToo) {
    auto location = parse_gcs_uri("gs://models/dir with space/a+b=c&d~e.tensors");
    ASSERT_TRUE(location);
    EXPECT_EQ(gcs_media_url("http://127.0.0.1:4443", *location),
              "http://127.0.0.1:4443/storage/v1/b/models/o/dir%20with%20space%2Fa%2Bb%3Dc%26d~e.tensors?alt=media");
    EXPECT_EQ(gcs_resumable_upload_url("https://storage.googleapis.com", *location),
              "https://storage.googleapis.com/upload/storage/v1/b/models/o?uploadType=resumable&name="
              "dir%20with%20space%2Fa%2Bb%3Dc%26d~e.tensors");
}

TEST(GcsEndpoint, SettingThenEmulatorHostThenGoogle) {
    auto from_setting = resolve_gcs_endpoint("http://10.0.0.5:9000/", env_of({{"STORAGE_EMULATOR_HOST", "h:1"}}));
    ASSERT_TRUE(from_setting) << from_setting.error().detail;
    EXPECT_EQ(*from_setting, "http://10.0.0.5:9000");
    auto bare = resolve_gcs_endpoint("", env_of({{"STORAGE_EMULATOR_HOST", "127.0.0.1:4443"}}));
    ASSERT_TRUE(bare);
    EXPECT_EQ(*bare, "http://127.0.0.1:4443"); // as google-cloud-storage and the Go client read it
    auto with_scheme = resolve_gcs_endpoint("", env_of({{"STORAGE_EMULATOR_HOST", "https://emulator:8443"}}));
    ASSERT_TRUE(with_scheme);
    EXPECT_EQ(*with_scheme, "https://emulator:8443");
    auto google = resolve_gcs_endpoint("", env_of({{"STORAGE_EMULATOR_HOST", ""}}));
    ASSERT_TRUE(google);
    EXPECT_EQ(*google, "https://storage.googleapis.com");
}

TEST(GcsEndpoint, UnusableEndpointNamesWhereItCameFrom) {
    auto bad = resolve_gcs_endpoint("", env_of({{"STORAGE_EMULATOR_HOST", "ftp://h:1"}}));
    ASSERT_FALSE(bad);
    EXPECT_NE(bad.error().detail.find("STORAGE_EMULATOR_HOST"), std::string::npos) << bad.error().detail;
    auto with_path = resolve_gcs_endpoint("http://h:1/prefix", env_of({}));
    ASSERT_FALSE(with_path);
    EXPECT_NE(with_path.error().detail.find("gcs_endpoint"), std::string::npos) << with_path.error().detail;
}

TEST(GcsErrorSummary, JsonApiAndOAuthBodies) {
    EXPECT_EQ(gcs_error_summary(R"({"error":{"code":404,"message":"No such object: models/a.bin","errors":[]}})"),
              "No such object: models/a.bin");
    EXPECT_EQ(gcs_error_summary(R"({"error":"invalid_grant","error_description":"Invalid JWT Signature."})"),
              "invalid_grant: Invalid JWT Signature.");
    EXPECT_EQ(gcs_error_summary(R"({"error":"unauthorized_client"})"), "unauthorized_client");
    EXPECT_EQ(gcs_error_summary("<html>Not Found</html>"), "");
    EXPECT_EQ(gcs_error_summary(R"({"kind":"storage#object"})"), "");
    EXPECT_EQ(gcs_error_summary(R"({"error":{"message":"a\u001b[31mb"}})").find('\x1b'), std::string::npos);
}

} // namespace
} // namespace ringload
