// tests/io/azure_config_test.cpp
//
// The Azure source's small parsers with a made-up environment (a map, not the process's): both
// URI forms and what is refused, connection strings (BlobEndpoint, protocol and suffix,
// UseDevelopmentStorage), the credential and endpoint orders, the blob URL's encoding, the
// base64 key, the RFC 1123 date, the XML error summary; and that errors never carry a key or a
// SAS. The signature itself is checked against azure-storage-blob in azure_sign_test.py.
#include "ringload/io/azure_config.hpp"
#include "ringload/io/azure_signer.hpp"
#include "ringload/io/azure_source.hpp"

#include <gtest/gtest.h>

#include <map>

namespace ringload {
namespace {

constexpr const char* key = "a2V5LWJ5dGVzLWZvci10ZXN0cw=="; // "key-bytes-for-tests"
constexpr const char* sas = "sv=2021-08-06&sr=c&sp=r&se=2030-01-01T00%3A00%3A00Z&sig=c2lnbmF0dXJl";

class AzureConfigTest : public ::testing::Test {
protected:
    EnvLookup env() const {
        return [vars = env_](const std::string& name) -> std::optional<std::string> {
            auto it = vars.find(name);
            return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
        };
    }

    Result<AzureConfig> resolve(const AzureSettings& settings = {}, std::string_view uri = "az://acct/models/m.bin") {
        auto location = parse_azure_uri(uri);
        EXPECT_TRUE(location.has_value()) << uri;
        return resolve_azure_config(settings, *location, env());
    }

    std::map<std::string, std::string> env_;
};

TEST(AzureUri, SplitsAccountContainerAndBlob) {
    auto location = parse_azure_uri("az://acct/models/dir/a b?.bin");
    ASSERT_TRUE(location.has_value());
    EXPECT_EQ(location->account, "acct");
    EXPECT_EQ(location->container, "models");
    EXPECT_EQ(location->blob, "dir/a b?.bin"); // as given: az:// names are not encoded
    EXPECT_EQ(location->origin, "");
}

TEST(AzureUri, BlobUrlIsDecodedAndKeepsItsQuery) {
    auto location = parse_azure_uri("https://acct.blob.core.windows.net/models/dir/a%20b%2B.bin?snapshot=x&sig=abc");
    ASSERT_TRUE(location.has_value());
    EXPECT_EQ(location->account, "acct");
    EXPECT_EQ(location->container, "models");
    EXPECT_EQ(location->blob, "dir/a b+.bin");
    EXPECT_EQ(location->origin, "https://acct.blob.core.windows.net");
    EXPECT_EQ(location->query, "snapshot=x&sig=abc");
}

TEST(AzureUri, TakesOnlyAzureForms) {
    EXPECT_TRUE(is_azure_uri("az://acct/c/b"));
    EXPECT_TRUE(is_azure_uri("https://acct.blob.core.windows.net/c/b"));
    EXPECT_TRUE(is_azure_uri("https://ACCT.Blob.Core.Windows.Net/c/b"));
    EXPECT_FALSE(is_azure_uri("https://example.com/acct.blob.core.windows.net/c/b"));
    EXPECT_FALSE(is_azure_uri("https://a.b.blob.core.windows.net/c/b"));
    EXPECT_FALSE(is_azure_uri("https://blob.core.windows.net/c/b"));
    EXPECT_FALSE(is_azure_uri("s3://bucket/key"));
    EXPECT_FALSE(is_azure_uri("/models/az://x"));
}

TEST(AzureUri, RefusesWhatNamesNoBlob) {
    for (const char* uri : {"az://acct", "az://acct/models", "az://acct/models/", "az:///models/b", "az://Acct/c/b",
                            "az://acct//b", "https://acct.blob.core.windows.net/models"}) {
        auto location = parse_azure_uri(uri);
        ASSERT_FALSE(location.has_value()) << uri;
        EXPECT_EQ(location.error().code, errc::invalid_argument);
        EXPECT_NE(location.error().detail.find("az://ACCOUNT/CONTAINER/BLOB"), std::string::npos);
    }
}

TEST_F(AzureConfigTest, NoCredentialsIsAnonymousAtTheAccountsHost) {
    auto config = resolve();
    ASSERT_TRUE(config.has_value());
    EXPECT_EQ(config->auth, AzureAuth::anonymous);
    EXPECT_EQ(config->endpoint, "https://acct.blob.core.windows.net");
    EXPECT_NE(config->credentials_from.find("anonymous"), std::string::npos);
}

TEST_F(AzureConfigTest, CredentialOrder) {
    env_["AZURE_STORAGE_CONNECTION_STRING"] = std::string("AccountName=acct;AccountKey=") + key;
    env_["AZURE_STORAGE_SAS_TOKEN"] = sas;
    EXPECT_EQ(resolve()->credentials_from, "AZURE_STORAGE_CONNECTION_STRING (AccountKey)");
    EXPECT_EQ(resolve()->key, "key-bytes-for-tests");
    EXPECT_EQ(resolve({.account_key = key})->credentials_from, "option azure_account_key");
    EXPECT_EQ(resolve({.sas = sas, .account_key = key})->credentials_from, "option azure_sas");
    EXPECT_EQ(resolve({.sas = sas, .anonymous = true})->auth, AzureAuth::anonymous);
    auto url_sas = resolve({.sas = sas}, std::string("https://acct.blob.core.windows.net/c/b?") + sas);
    EXPECT_EQ(url_sas->credentials_from, "the URL's SAS");
    EXPECT_EQ(url_sas->sas, ""); // the URL has it already
    env_.erase("AZURE_STORAGE_CONNECTION_STRING");
    EXPECT_EQ(resolve()->credentials_from, "AZURE_STORAGE_SAS_TOKEN");
    env_.erase("AZURE_STORAGE_SAS_TOKEN");
    env_["AZURE_STORAGE_KEY"] = key;
    EXPECT_EQ(resolve()->credentials_from, "AZURE_STORAGE_KEY");
    env_["AZURE_STORAGE_ACCOUNT"] = "other";
    EXPECT_EQ(resolve()->auth, AzureAuth::anonymous); // that key is another account's
    EXPECT_NE(resolve()->credentials_from.find("AZURE_STORAGE_ACCOUNT 'other'"), std::string::npos);
}

TEST_F(AzureConfigTest, ConnectionStringEndpoints) {
    env_["AZURE_STORAGE_CONNECTION_STRING"] =
        " DefaultEndpointsProtocol=http ; "
        "AccountName=acct;EndpointSuffix=core.chinacloudapi.cn;SharedAccessSignature=" +
        std::string(sas);
    auto config = resolve();
    EXPECT_EQ(config->endpoint, "http://acct.blob.core.chinacloudapi.cn");
    EXPECT_EQ(config->auth, AzureAuth::sas);
    EXPECT_EQ(config->sas, sas);
    env_["AZURE_STORAGE_CONNECTION_STRING"] = "BlobEndpoint=http://127.0.0.1:10000/acct/;accountname=acct";
    EXPECT_EQ(resolve()->endpoint, "http://127.0.0.1:10000/acct");
    EXPECT_EQ(resolve({.endpoint = "http://localhost:1/acct"})->endpoint, "http://localhost:1/acct");
    // An https:// URL goes to its own host unless azure_endpoint says otherwise.
    EXPECT_EQ(resolve({}, "https://acct.blob.core.windows.net/c/b")->endpoint, "https://acct.blob.core.windows.net");
    EXPECT_EQ(resolve({.endpoint = "http://localhost:1/acct"}, "https://acct.blob.core.windows.net/c/b")->endpoint,
              "http://localhost:1/acct");
}

TEST_F(AzureConfigTest, DevelopmentStorageIsAzurite) {
    auto location = parse_azure_uri("az://devstoreaccount1/c/b");
    auto config = resolve_azure_config({.connection_string = "UseDevelopmentStorage=true"}, *location, env());
    ASSERT_TRUE(config.has_value());
    EXPECT_EQ(config->endpoint, "http://127.0.0.1:10000/devstoreaccount1");
    EXPECT_EQ(config->auth, AzureAuth::shared_key);
    EXPECT_EQ(config->credentials_from, "option azure_connection_string (AccountKey)");
}

TEST_F(AzureConfigTest, RefusalsNameTheSettingNeverItsValue) {
    const std::string secret_key = "c2VjcmV0LWtleS0x"; // no padding: no '=' in it
    env_["AZURE_STORAGE_CONNECTION_STRING"] = "AccountName=other;AccountKey=" + secret_key;
    auto other = resolve();
    ASSERT_FALSE(other.has_value());
    EXPECT_NE(other.error().detail.find("is for account 'other', not the URI's 'acct'"), std::string::npos);
    env_["AZURE_STORAGE_CONNECTION_STRING"] = "AccountKey" + secret_key;
    auto malformed = resolve();
    ASSERT_FALSE(malformed.has_value());
    EXPECT_EQ(malformed.error().detail.find(secret_key), std::string::npos);
    env_.clear();
    auto not_base64 = resolve({.account_key = "not a key!"});
    ASSERT_FALSE(not_base64.has_value());
    EXPECT_EQ(not_base64.error().detail, "option azure_account_key: the account key is not base64");
    auto no_sig = resolve({.sas = "sv=2021-08-06&sp=r"});
    ASSERT_FALSE(no_sig.has_value());
    EXPECT_NE(no_sig.error().detail.find("no sig="), std::string::npos);
    EXPECT_FALSE(resolve({.endpoint = "ftp://host"}).has_value());
}

TEST_F(AzureConfigTest, BlobUrlEncodesOnceAndAppendsTheSas) {
    auto location = parse_azure_uri("az://acct/models/dir/a b+ü~.bin");
    auto config = resolve_azure_config({.endpoint = "http://127.0.0.1:10000/acct", .sas = "?" + std::string(sas)},
                                       *location, env());
    ASSERT_TRUE(config.has_value());
    EXPECT_EQ(azure_blob_url(*config, *location),
              "http://127.0.0.1:10000/acct/models/dir/a%20b%2B%C3%BC~.bin?" + std::string(sas));
}

TEST(AzureSigner, DecodesKeysAndDatesAsAzureWritesThem) {
    EXPECT_EQ(azure_decode_key("a2V5"), "key");
    EXPECT_EQ(azure_decode_key("a2U="), "ke");
    EXPECT_EQ(azure_decode_key("aw=="), "k");
    EXPECT_FALSE(azure_decode_key("a2V").has_value());
    EXPECT_FALSE(azure_decode_key("a2V5=").has_value());
    EXPECT_FALSE(azure_decode_key("a=V5").has_value());
    EXPECT_FALSE(azure_decode_key("").has_value());
    EXPECT_EQ(azure_rfc1123_date(std::chrono::system_clock::from_time_t(1369616523)), "Mon, 27 May 2013 01:02:03 GMT");
}

TEST(AzureSigner, AnonymousAndSasRequestsCarryOnlyTheVersion) {
    AzureConfig config;
    config.account = "acct";
    auto url = parse_http_url("https://acct.blob.core.windows.net/c/b");
    auto headers = azure_request_headers(config, *url, "GET", {{"Range", "bytes=0-0"}});
    ASSERT_EQ(headers.size(), 1u);
    EXPECT_EQ(headers[0].first, "x-ms-version");
}

TEST(AzureSigner, StringToSignHasTheRangeAndTheSortedQuery) {
    auto url = parse_http_url("http://127.0.0.1:10000/acct/c/a%20b?comp=list&B=2&b=1&prefix=d%2F");
    const std::string text = azure_string_to_sign(
        "GET", *url, "acct",
        {{"x-ms-version", "v"}, {"Range", "bytes=0-9"}, {"X-Ms-Date", "d"}, {"Content-Length", "0"}});
    EXPECT_EQ(text,
              "GET\n\n\n\n\n\n\n\n\n\n\nbytes=0-9\nx-ms-date:d\nx-ms-version:v\n/acct/acct/c/a%20b"
              "\nb:1,2\ncomp:list\nprefix:d/");
}

TEST(AzureError, SummaryIsCodeAndTheMessagesFirstLine) {
    const std::string body =
        "\xEF\xBB\xBF<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>AuthenticationFailed</Code>"
        "<Message>Server failed to authenticate the request.\nRequestId:1\nTime:2</Message>"
        "<AuthenticationErrorDetail>The MAC signature found in the HTTP request 'c2ln' is not "
        "the same</AuthenticationErrorDetail></Error>";
    EXPECT_EQ(azure_error_summary(body), "AuthenticationFailed: Server failed to authenticate the request.");
    EXPECT_EQ(azure_error_summary("<Error><Code>BlobNotFound</Code></Error>"), "BlobNotFound");
    EXPECT_EQ(azure_error_summary("<html>no</html>"), "");
}

} // namespace
} // namespace ringload
