// io/src/gcs_credentials.hpp
//
// Where a gs:// source's credentials come from, in the order Google's client libraries look
// ("Application Default Credentials"), each step only when the ones before found nothing:
//   1. the gcs_anonymous setting: anonymous, whatever else exists;
//   2. the gcs_credentials setting (a path), else GOOGLE_APPLICATION_CREDENTIALS: a JSON key
//      file, of a service account (client_email, private_key, token_uri: a signed JWT traded
//      for an access token, gcs_jwt.hpp) or of a user (`gcloud auth application-default
//      login`'s authorized_user: client_id, client_secret, refresh_token);
//   3. gcloud's application_default_credentials.json (in CLOUDSDK_CONFIG, else
//      ~/.config/gcloud), the same two kinds;
//   4. else the metadata server of a GCE VM or GKE pod (GCE_METADATA_HOST, else 169.254.169.254).
//      Only a guess: gcs_access.cpp asks it once with a short timeout and goes anonymous when it
//      does not answer ("credentials: none found, anonymous").
// A file named by a setting or GOOGLE_APPLICATION_CREDENTIALS that cannot be read or parsed is
// an error, as in Google's libraries. Messages name files and settings, never a secret.
//
//     RL_TRY(credentials, find_gcs_credentials(network, process_environment()));
//     credentials.from   // "GOOGLE_APPLICATION_CREDENTIALS (/etc/sa.json): service account a@p.iam..."
#pragma once

#include "ringload/error.hpp"
#include "ringload/io/network_options.hpp"
#include "ringload/io/s3_config.hpp" // EnvLookup

#include <cstdint>
#include <string>
#include <string_view>

namespace ringload {

// The gs:// source's settings (SourceKind::options; NetworkOptions::source_settings).
inline constexpr std::string_view gcs_endpoint_setting = "gcs_endpoint";
inline constexpr std::string_view gcs_credentials_setting = "gcs_credentials";
inline constexpr std::string_view gcs_anonymous_setting = "gcs_anonymous";

inline constexpr std::string_view gcs_default_token_uri = "https://oauth2.googleapis.com/token";
inline constexpr std::string_view gcs_default_metadata_host = "169.254.169.254";

enum class GcsCredentialKind : std::uint8_t {
    anonymous,       // no Authorization header
    service_account, // a JWT signed with private_key, traded at token_uri
    authorized_user, // refresh_token traded at token_uri
    metadata_server, // the VM's own token from metadata_host
};

struct GcsCredentials {
    GcsCredentialKind kind = GcsCredentialKind::anonymous;
    std::string from; // for messages: where they came from and whose they are
    std::string client_email;
    std::string private_key_pem; // secret
    std::string private_key_id;
    std::string token_uri;
    std::string client_id;
    std::string client_secret; // secret
    std::string refresh_token; // secret
    std::string metadata_host; // "host[:port]"
};

Result<GcsCredentials> find_gcs_credentials(const NetworkOptions& network, const EnvLookup& env);

// One JSON key file's contents; `from` names it in messages (and prefixes GcsCredentials::from).
Result<GcsCredentials> parse_gcs_credentials(std::string_view json_text, const std::string& from);

} // namespace ringload
