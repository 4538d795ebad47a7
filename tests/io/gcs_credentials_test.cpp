// tests/io/gcs_credentials_test.cpp
//
// Where gs:// credentials come from (io/src/gcs_credentials.hpp), in Google's order: the
// gcs_anonymous flag over everything; the gcs_credentials setting over
// GOOGLE_APPLICATION_CREDENTIALS over gcloud's application_default_credentials.json (in
// CLOUDSDK_CONFIG, else ~/.config/gcloud); else the metadata server (GCE_METADATA_HOST). Key
// files of service accounts and users; errors that name the file and quote no secret.
#include "gcs_credentials.hpp"

#include "../support/test_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

namespace ringload {
namespace {

using testing::TempDir;

EnvLookup env_of(std::map<std::string, std::string> values) {
    return [values = std::move(values)](const std::string& name) -> std::optional<std::string> {
        const auto found = values.find(name);
        return found == values.end() ? std::nullopt : std::optional<std::string>(found->second);
    };
}

std::string service_account_json(const std::string& email) {
    return R"({"type": "service_account", "project_id": "p", "private_key_id": "k1",
               "private_key": "-----BEGIN PRIVATE KEY-----\nSECRETKEYBYTES\n-----END PRIVATE KEY-----\n",
               "client_email": ")" +
           email + R"(", "token_uri": "http://127.0.0.1:1/token"})";
}

using testing::write_text;

NetworkOptions with_settings(std::map<std::string, std::string> settings) {
    NetworkOptions network;
    for (auto& [name, value] : settings) {
        network.source_settings.emplace(name, value);
    }
    return network;
}

TEST(GcsCredentials, AnonymousFlagWinsOverEverything) {
    TempDir dir;
    const auto key = write_text(dir.path() / "sa.json", service_account_json("a@p.iam.gserviceaccount.com"));
    auto found = find_gcs_credentials(with_settings({{"gcs_anonymous", "true"}, {"gcs_credentials", key}}),
                                      env_of({{"GOOGLE_APPLICATION_CREDENTIALS", key}}));
    ASSERT_TRUE(found) << found.error().detail;
    EXPECT_EQ(found->kind, GcsCredentialKind::anonymous);
    EXPECT_NE(found->from.find("gcs_anonymous"), std::string::npos);
}

TEST(GcsCredentials, SettingThenEnvironmentThenGcloudFile) {
    TempDir dir;
    const auto from_setting = write_text(dir.path() / "setting.json", service_account_json("setting@p"));
    const auto from_env = write_text(dir.path() / "env.json", service_account_json("env@p"));
    write_text(dir.path() / "home/.config/gcloud/application_default_credentials.json", service_account_json("adc@p"));
    const std::string home = (dir.path() / "home").string();

    auto setting = find_gcs_credentials(with_settings({{"gcs_credentials", from_setting}}),
                                        env_of({{"GOOGLE_APPLICATION_CREDENTIALS", from_env}, {"HOME", home}}));
    ASSERT_TRUE(setting) << setting.error().detail;
    EXPECT_EQ(setting->client_email, "setting@p");
    EXPECT_EQ(setting->from, "gcs_credentials " + from_setting + ": service account setting@p");

    auto env = find_gcs_credentials({}, env_of({{"GOOGLE_APPLICATION_CREDENTIALS", from_env}, {"HOME", home}}));
    ASSERT_TRUE(env);
    EXPECT_EQ(env->client_email, "env@p");
    EXPECT_EQ(env->from, "GOOGLE_APPLICATION_CREDENTIALS (" + from_env + "): service account env@p");
    EXPECT_EQ(env->kind, GcsCredentialKind::service_account);
    EXPECT_EQ(env->token_uri, "http://127.0.0.1:1/token");
    EXPECT_EQ(env->private_key_id, "k1");

    auto adc = find_gcs_credentials({}, env_of({{"HOME", home}}));
    ASSERT_TRUE(adc);
    EXPECT_EQ(adc->client_email, "adc@p");
    EXPECT_NE(adc->from.find("application_default_credentials.json"), std::string::npos);
}

TEST(GcsCredentials, CloudsdkConfigMovesGcloudsFolder) {
    TempDir dir;
    write_text(dir.path() / "elsewhere/application_default_credentials.json", service_account_json("moved@p"));
    write_text(dir.path() / "home/.config/gcloud/application_default_credentials.json", service_account_json("home@p"));
    auto found = find_gcs_credentials({}, env_of({{"CLOUDSDK_CONFIG", (dir.path() / "elsewhere").string()},
                                                  {"HOME", (dir.path() / "home").string()}}));
    ASSERT_TRUE(found) << found.error().detail;
    EXPECT_EQ(found->client_email, "moved@p");
}

TEST(GcsCredentials, NothingFoundMeansTheMetadataServer) {
    TempDir dir;
    auto guess = find_gcs_credentials({}, env_of({{"HOME", dir.path().string()}}));
    ASSERT_TRUE(guess);
    EXPECT_EQ(guess->kind, GcsCredentialKind::metadata_server);
    EXPECT_EQ(guess->metadata_host, "169.254.169.254");
    auto moved = find_gcs_credentials({}, env_of({{"GCE_METADATA_HOST", "127.0.0.1:8080"}}));
    ASSERT_TRUE(moved);
    EXPECT_EQ(moved->metadata_host, "127.0.0.1:8080");
    EXPECT_NE(moved->from.find("metadata server at 127.0.0.1:8080"), std::string::npos);
}

TEST(GcsCredentials, UserCredentialsFromGcloudLogin) {
    auto user = parse_gcs_credentials(
        R"({"type":"authorized_user","client_id":"id.apps","client_secret":"cs","refresh_token":"1//rt"})", "adc.json");
    ASSERT_TRUE(user) << user.error().detail;
    EXPECT_EQ(user->kind, GcsCredentialKind::authorized_user);
    EXPECT_EQ(user->refresh_token, "1//rt");
    EXPECT_EQ(user->token_uri, "https://oauth2.googleapis.com/token");
    EXPECT_EQ(user->from, "adc.json: user credentials");
}

TEST(GcsCredentials, BadFilesNameTheFileAndQuoteNoSecret) {
    TempDir dir;
    auto missing = find_gcs_credentials({}, env_of({{"GOOGLE_APPLICATION_CREDENTIALS", "/no/such/sa.json"}}));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.error().code, errc::not_found);
    EXPECT_NE(missing.error().detail.find("GOOGLE_APPLICATION_CREDENTIALS (/no/such/sa.json)"), std::string::npos);

    const auto broken =
        write_text(dir.path() / "broken.json", R"({"type":"service_account","private_key":"SECRETKEYBYTES")");
    auto unparsed = find_gcs_credentials(with_settings({{"gcs_credentials", broken}}), env_of({}));
    ASSERT_FALSE(unparsed);
    EXPECT_NE(unparsed.error().detail.find(broken), std::string::npos);
    EXPECT_EQ(unparsed.error().detail.find("SECRETKEYBYTES"), std::string::npos);

    auto no_email = parse_gcs_credentials(R"({"type":"service_account","private_key":"SECRETKEYBYTES"})", "k.json");
    ASSERT_FALSE(no_email);
    EXPECT_NE(no_email.error().detail.find("client_email"), std::string::npos);
    EXPECT_EQ(no_email.error().detail.find("SECRETKEYBYTES"), std::string::npos);

    auto other = parse_gcs_credentials(R"({"type":"external_account"})", "k.json");
    ASSERT_FALSE(other);
    EXPECT_EQ(other.error().code, errc::unsupported);
    EXPECT_NE(other.error().detail.find("external_account"), std::string::npos);
}

} // namespace
} // namespace ringload
