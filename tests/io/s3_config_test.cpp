// tests/io/s3_config_test.cpp
//
// The s3:// lookup chain with a temporary HOME and a made-up environment (a map, not the
// process's): explicit options, then AWS_* variables, then the ~/.aws profile (credentials and
// config files, AWS_PROFILE, [profile x], AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE), then
// ~/.s3cfg, else anonymous; the endpoint and region orders; path-style and virtual-hosted URLs
// with keys that need encoding; and that errors and signed headers never carry the secret.
#include "ringload/io/s3_config.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/s3_signer.hpp"

#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace ringload {
namespace {

using testing::TempDir;

class S3ConfigTest : public ::testing::Test {
protected:
    void SetUp() override { env_["HOME"] = home_.path().string(); }

    EnvLookup env() const {
        return [vars = env_](const std::string& name) -> std::optional<std::string> {
            auto it = vars.find(name);
            return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
        };
    }

    void write(const std::string& relative, const std::string& text) {
        testing::write_text(home_.path() / relative, text);
    }

    Result<S3Config> resolve(const S3Options& options = {}, std::string_view bucket = "bucket") const {
        return resolve_s3_config(options, env(), bucket);
    }

    TempDir home_;
    std::map<std::string, std::string> env_;
};

TEST(S3Uri, SplitsBucketAndKey) {
    auto location = parse_s3_uri("s3://models/dir/a b+c.tensors");
    ASSERT_TRUE(location) << location.error().message();
    EXPECT_EQ(location->bucket, "models");
    EXPECT_EQ(location->key, "dir/a b+c.tensors");
    EXPECT_FALSE(parse_s3_uri("s3://models"));
    EXPECT_FALSE(parse_s3_uri("s3://models/"));
    EXPECT_FALSE(parse_s3_uri("s3:///key"));
    EXPECT_FALSE(parse_s3_uri("http://models/key"));
}

TEST_F(S3ConfigTest, NothingFoundIsAnonymousOnAwsInUsEast1) {
    auto config = resolve();
    ASSERT_TRUE(config) << config.error().message();
    EXPECT_TRUE(config->anonymous);
    EXPECT_EQ(config->region, "us-east-1");
    EXPECT_EQ(config->endpoint, "https://s3.us-east-1.amazonaws.com");
    EXPECT_FALSE(config->path_style);
}

TEST_F(S3ConfigTest, ExplicitOptionsComeFirst) {
    env_["AWS_ACCESS_KEY_ID"] = "ENVKEY";
    env_["AWS_SECRET_ACCESS_KEY"] = "envsecret";
    S3Options options;
    options.access_key_id = "OPTKEY";
    options.secret_access_key = "optsecret";
    options.session_token = "opttoken";
    auto config = resolve(options);
    ASSERT_TRUE(config);
    EXPECT_FALSE(config->anonymous);
    EXPECT_EQ(config->credentials.access_key_id, "OPTKEY");
    EXPECT_EQ(config->credentials.secret_access_key, "optsecret");
    EXPECT_EQ(config->credentials.session_token, "opttoken");
    EXPECT_EQ(config->credentials_from, "S3 options");
}

TEST_F(S3ConfigTest, AnonymousOptionWinsOverEverything) {
    env_["AWS_ACCESS_KEY_ID"] = "ENVKEY";
    env_["AWS_SECRET_ACCESS_KEY"] = "envsecret";
    S3Options options;
    options.anonymous = true;
    auto config = resolve(options);
    ASSERT_TRUE(config);
    EXPECT_TRUE(config->anonymous);
}

TEST_F(S3ConfigTest, HalfAKeyPairIsAnErrorWithoutTheSecret) {
    S3Options options;
    options.secret_access_key = "optsecret-do-not-print";
    auto config = resolve(options);
    ASSERT_FALSE(config);
    EXPECT_EQ(config.error().detail.find("optsecret-do-not-print"), std::string::npos);
    env_["AWS_SECRET_ACCESS_KEY"] = "envsecret-do-not-print";
    auto from_env = resolve();
    ASSERT_FALSE(from_env);
    EXPECT_NE(from_env.error().detail.find("AWS_ACCESS_KEY_ID"), std::string::npos);
    EXPECT_EQ(from_env.error().detail.find("envsecret-do-not-print"), std::string::npos);
}

TEST_F(S3ConfigTest, EnvironmentBeforeProfileFiles) {
    write(".aws/credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n");
    env_["AWS_ACCESS_KEY_ID"] = "ENVKEY";
    env_["AWS_SECRET_ACCESS_KEY"] = "envsecret";
    env_["AWS_SESSION_TOKEN"] = "envtoken";
    auto config = resolve();
    ASSERT_TRUE(config);
    EXPECT_EQ(config->credentials.access_key_id, "ENVKEY");
    EXPECT_EQ(config->credentials.session_token, "envtoken");
}

TEST_F(S3ConfigTest, DefaultProfileFromCredentialsAndRegionFromConfig) {
    write(".aws/credentials",
          "# comment\n[default]\naws_access_key_id = FILEKEY\n"
          "aws_secret_access_key=filesecret\naws_session_token = filetoken\n"
          "[other]\naws_access_key_id = OTHERKEY\naws_secret_access_key = othersecret\n");
    write(".aws/config", "[default]\nregion = eu-west-3\ns3 =\n    region = ignored-nested\n");
    auto config = resolve();
    ASSERT_TRUE(config);
    EXPECT_EQ(config->credentials.access_key_id, "FILEKEY");
    EXPECT_EQ(config->credentials.secret_access_key, "filesecret");
    EXPECT_EQ(config->credentials.session_token, "filetoken");
    EXPECT_EQ(config->region, "eu-west-3");
    EXPECT_EQ(config->endpoint, "https://s3.eu-west-3.amazonaws.com");
    EXPECT_NE(config->credentials_from.find("profile default"), std::string::npos);
}

TEST_F(S3ConfigTest, NamedProfileFromAwsProfileAndConfigSections) {
    write(".aws/credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n");
    write(".aws/config",
          "[profile dev]\naws_access_key_id = DEVKEY\naws_secret_access_key = devsecret\n"
          "region = ap-south-1\n");
    env_["AWS_PROFILE"] = "dev";
    auto config = resolve();
    ASSERT_TRUE(config);
    EXPECT_EQ(config->credentials.access_key_id, "DEVKEY");
    EXPECT_EQ(config->region, "ap-south-1");
    // The option names the profile before AWS_PROFILE does.
    S3Options options;
    options.profile = "default";
    auto by_option = resolve(options);
    ASSERT_TRUE(by_option);
    EXPECT_EQ(by_option->credentials.access_key_id, "FILEKEY");
}

TEST_F(S3ConfigTest, FilesNamedByTheEnvironment) {
    const auto elsewhere = home_.path() / "elsewhere";
    std::filesystem::create_directories(elsewhere);
    std::ofstream(elsewhere / "creds") << "[ci]\naws_access_key_id = CIKEY\naws_secret_access_key = cisecret\n";
    std::ofstream(elsewhere / "conf") << "[profile ci]\nregion = us-west-2\n";
    env_["AWS_SHARED_CREDENTIALS_FILE"] = (elsewhere / "creds").string();
    env_["AWS_CONFIG_FILE"] = (elsewhere / "conf").string();
    env_["AWS_PROFILE"] = "ci";
    auto config = resolve();
    ASSERT_TRUE(config);
    EXPECT_EQ(config->credentials.access_key_id, "CIKEY");
    EXPECT_EQ(config->region, "us-west-2");
}

TEST_F(S3ConfigTest, MissingNamedProfileIsAnError) {
    env_["AWS_PROFILE"] = "nope";
    auto config = resolve();
    ASSERT_FALSE(config);
    EXPECT_NE(config.error().detail.find("'nope'"), std::string::npos) << config.error().detail;
}

TEST_F(S3ConfigTest, S3cfgAfterProfilesWithItsEndpoint) {
    write(".s3cfg",
          "[default]\naccess_key = CFGKEY\nsecret_key = cfgsecret\nhost_base = object.example.com\n"
          "use_https = False\n");
    auto config = resolve();
    ASSERT_TRUE(config);
    EXPECT_EQ(config->credentials.access_key_id, "CFGKEY");
    EXPECT_EQ(config->credentials.secret_access_key, "cfgsecret");
    EXPECT_EQ(config->endpoint, "http://object.example.com");
    EXPECT_TRUE(config->path_style);
    // A profile with keys wins over .s3cfg's keys; .s3cfg's host_base still names the endpoint.
    write(".aws/credentials", "[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = filesecret\n");
    auto both = resolve();
    ASSERT_TRUE(both);
    EXPECT_EQ(both->credentials.access_key_id, "FILEKEY");
    EXPECT_EQ(both->endpoint, "http://object.example.com");
}

TEST_F(S3ConfigTest, EndpointOrder) {
    write(".s3cfg", "[default]\nhost_base = s3cfg.example.com\n");
    EXPECT_EQ(resolve()->endpoint, "https://s3cfg.example.com");
    env_["AWS_ENDPOINT_URL"] = "http://any.example.com:9000/";
    EXPECT_EQ(resolve()->endpoint, "http://any.example.com:9000");
    env_["AWS_ENDPOINT_URL_S3"] = "http://s3.example.com:9001";
    EXPECT_EQ(resolve()->endpoint, "http://s3.example.com:9001");
    S3Options options;
    options.endpoint = "127.0.0.1:9002";
    EXPECT_EQ(resolve(options)->endpoint, "https://127.0.0.1:9002");
    options.endpoint = "ftp://x";
    EXPECT_FALSE(resolve(options));
}

TEST_F(S3ConfigTest, RegionOrder) {
    write(".aws/config", "[default]\nregion = from-profile\n");
    EXPECT_EQ(resolve()->region, "from-profile");
    env_["AWS_DEFAULT_REGION"] = "from-default-region";
    EXPECT_EQ(resolve()->region, "from-default-region");
    env_["AWS_REGION"] = "from-region";
    EXPECT_EQ(resolve()->region, "from-region");
    S3Options options;
    options.region = "from-options";
    EXPECT_EQ(resolve(options)->region, "from-options");
}

TEST_F(S3ConfigTest, AddressingAndKeyEncoding) {
    const S3Location location{"models", "dir/a b+c=d&e~f.tensors"};
    auto aws = resolve({}, "models");
    ASSERT_TRUE(aws);
    EXPECT_EQ(s3_object_url(*aws, location),
              "https://models.s3.us-east-1.amazonaws.com/dir/a%20b%2Bc%3Dd%26e~f.tensors");
    // A bucket with dots cannot be a host name label under AWS's certificate: path-style.
    auto dotted = resolve({}, "my.models");
    ASSERT_TRUE(dotted);
    EXPECT_TRUE(dotted->path_style);
    S3Options local;
    local.endpoint = "http://127.0.0.1:9000";
    auto path = resolve(local, "models");
    ASSERT_TRUE(path);
    EXPECT_EQ(s3_object_url(*path, location), "http://127.0.0.1:9000/models/dir/a%20b%2Bc%3Dd%26e~f.tensors");
    local.addressing = S3Addressing::virtual_host;
    local.endpoint = "http://localhost:9000";
    auto virtual_host = resolve(local, "models");
    ASSERT_TRUE(virtual_host);
    EXPECT_EQ(s3_object_url(*virtual_host, location), "http://models.localhost:9000/dir/a%20b%2Bc%3Dd%26e~f.tensors");
    EXPECT_EQ(percent_decode("dir/a%20b%2Bc%3dd%zz%2"), "dir/a b+c=d%zz%2");
}

TEST_F(S3ConfigTest, SignedHeadersCarryTheKeyIdNotTheSecret) {
    S3Options options;
    options.access_key_id = "AKIDEXAMPLE";
    options.secret_access_key = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    options.session_token = "token-123";
    options.endpoint = "http://127.0.0.1:9000";
    auto config = resolve(options);
    ASSERT_TRUE(config);
    Url url{"http", "127.0.0.1", "9000", "/bucket/a%20b?partNumber=1&uploadId=x%2By", "127.0.0.1:9000"};
    const auto headers = s3_request_headers(*config, url, "PUT", s3_empty_payload_sha256, {},
                                            std::chrono::system_clock::from_time_t(1369353600));
    std::map<std::string, std::string> by_name(headers.begin(), headers.end());
    EXPECT_EQ(by_name["x-amz-date"], "20130524T000000Z");
    EXPECT_EQ(by_name["x-amz-content-sha256"], s3_empty_payload_sha256);
    EXPECT_EQ(by_name["x-amz-security-token"], "token-123");
    EXPECT_TRUE(by_name["Authorization"].starts_with(
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20130524/us-east-1/s3/aws4_request, "
        "SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-security-token, Signature="))
        << by_name["Authorization"];
    for (const auto& [name, value] : headers) {
        EXPECT_EQ(value.find(options.secret_access_key), std::string::npos) << name;
    }
    S3Options anonymous = options;
    anonymous.anonymous = true;
    EXPECT_TRUE(s3_request_headers(*resolve(anonymous), url, "GET", s3_empty_payload_sha256).empty());
}

TEST(S3Error, SummarisesCodeAndMessage) {
    EXPECT_EQ(s3_error_summary("<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>The specified key "
                               "does not exist.</Message><Key>a</Key></Error>"),
              "NoSuchKey: The specified key does not exist.");
    EXPECT_EQ(s3_error_summary("<Error>\n  <Code>AccessDenied</Code>\n  <Message><![CDATA[Access Denied]]></Message>"
                               "</Error>"),
              "AccessDenied: Access Denied");
    EXPECT_EQ(s3_error_summary("<html>404</html>"), "");
}

} // namespace
} // namespace ringload
