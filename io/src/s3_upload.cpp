// io/src/s3_upload.cpp
#include "ringload/io/s3_upload.hpp"

#include "posix_file.hpp"
#include "ringload/io/s3_config.hpp"
#include "ringload/io/s3_connection.hpp"
#include "ringload/io/s3_error.hpp"
#include "ringload/io/s3_xml.hpp"
#include "ringload/io/sigv4.hpp"
#include "tls_context.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <vector>

namespace ringload {
namespace {

// What the part uploaders share; owned by upload_multipart, which outlives them.
struct MultipartUpload {
    int fd = -1;
    std::string path;
    std::uint64_t size_bytes = 0;
    std::size_t part_size_bytes = 0;
    std::size_t part_count = 0;
    std::string object_target; // "/bucket/key" or "/key", encoded
    std::string upload_id;
    std::size_t attempts = 0;
    std::size_t next_part = 0;        // the next part to take, 0-based
    std::vector<std::string> etags;   // per part, from UploadPart's answers
    std::optional<std::string> error; // the first failure: every uploader stops
};

std::string mib(std::size_t bytes) {
    return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

Result<std::vector<std::byte>> read_range(const MultipartUpload& upload, std::uint64_t offset, std::size_t length) {
    std::vector<std::byte> bytes(length);
    std::size_t got = 0;
    while (got < length) {
        RL_TRY(n, posix::pread_some(upload.fd, bytes.data() + got, length - got, offset + got, upload.path));
        if (n == 0) {
            return fail(errc::io_error, upload.path + ": the file shrank while it was being uploaded");
        }
        got += n;
    }
    return bytes;
}

// Takes parts until none are left or one failed anywhere; each part's bytes are read, sent and
// dropped before the next (memory: one part per connection).
Task<void> upload_parts(MultipartUpload& upload, S3Connection& connection) {
    while (!upload.error && upload.next_part < upload.part_count) {
        const std::size_t part = upload.next_part++;
        const std::uint64_t offset = static_cast<std::uint64_t>(part) * upload.part_size_bytes;
        const auto length =
            static_cast<std::size_t>(std::min<std::uint64_t>(upload.part_size_bytes, upload.size_bytes - offset));
        auto bytes = read_range(upload, offset, length);
        if (!bytes) {
            upload.error = bytes.error().detail;
            co_return;
        }
        const std::string target = upload.object_target + "?partNumber=" + std::to_string(part + 1) +
                                   "&uploadId=" + sigv4_uri_encode(upload.upload_id, false);
        auto sending = connection.send_with_retries("PUT", target, *bytes, "", upload.attempts);
        S3Response response = co_await std::move(sending);
        if (!response.ok() || response.etag.empty()) {
            if (!upload.error) {
                upload.error = "part " + std::to_string(part + 1) + " of " + std::to_string(upload.part_count) + ": " +
                               (response.ok() ? "the answer has no ETag" : response.failure);
            }
            co_return;
        }
        upload.etags[part] = response.etag;
    }
}

std::string complete_body(const MultipartUpload& upload) {
    std::string xml = "<CompleteMultipartUpload>";
    for (std::size_t part = 0; part < upload.part_count; ++part) {
        xml += "<Part><PartNumber>" + std::to_string(part + 1) + "</PartNumber><ETag>" + upload.etags[part] +
               "</ETag></Part>";
    }
    return xml + "</CompleteMultipartUpload>";
}

std::span<const std::byte> bytes_of(const std::string& text) {
    return std::as_bytes(std::span<const char>(text.data(), text.size()));
}

struct Endpoint {
    S3Config config;
    Url origin;                // scheme, host and port of every request
    std::string target;        // the object's path, encoded
    std::string key;           // the object's key, as given
    std::string bucket_target; // the bucket's path ("/bucket", or "/" when virtual-hosted)
    std::unique_ptr<asio::ssl::context> tls;
    std::chrono::milliseconds timeout{0};
    bool insecure = false;

    std::unique_ptr<S3Connection> connect(asio::io_context& loop) const {
        return std::make_unique<S3Connection>(loop, config, tls.get(), origin, timeout, insecure);
    }
    // A failure of the upload to `uri`, with where the credentials came from.
    Error failed(const std::string& uri, const std::string& what) const {
        return fail(errc::io_error, uri + ": " + what + " (credentials: " + config.credentials_from + ")");
    }
};

Result<Endpoint> endpoint_for(const std::string& uri, const NetworkOptions& options) {
    RL_TRY(location, parse_s3_uri(uri));
    auto config = resolve_s3_config(options.s3, process_environment(), location.bucket);
    if (!config) {
        return with_context(config.error(), uri);
    }
    RL_TRY(url, parse_http_url(s3_object_url(*config, location)));
    Endpoint endpoint{std::move(*config), url, url.target, location.key, "", nullptr};
    const std::string encoded_key = sigv4_uri_encode(location.key, true);
    endpoint.bucket_target = url.target.substr(0, url.target.size() - encoded_key.size());
    if (endpoint.bucket_target.size() > 1 && endpoint.bucket_target.ends_with('/')) {
        endpoint.bucket_target.pop_back();
    }
    endpoint.timeout = std::chrono::milliseconds(static_cast<long long>(options.timeout_seconds * 1000));
    endpoint.insecure = options.insecure;
    if (url.scheme == "https") {
        RL_TRY(tls, make_client_tls_context(options.ca_file, options.insecure));
        endpoint.tls = std::move(tls);
    }
    return endpoint;
}

// The part uploaders run side by side; this waits for all of them (they share `upload`).
Task<void> run_uploaders(asio::io_context& loop, MultipartUpload& upload,
                         std::vector<std::unique_ptr<S3Connection>>& connections) {
    std::size_t running = connections.size();
    asio::steady_timer all_done(loop);
    all_done.expires_at(asio::steady_timer::time_point::max());
    for (auto& connection : connections) {
        asio::co_spawn(loop, upload_parts(upload, *connection), [&running, &all_done](std::exception_ptr) {
            if (--running == 0) {
                all_done.cancel();
            }
        });
    }
    while (running > 0) {
        auto waited = co_await all_done.async_wait(use_task);
        (void)waited;
    }
}

// Opens the file and sizes its parts (at least 5 MiB, at most 10,000 of them).
Result<posix::FileDescriptor> open_for_upload(MultipartUpload& upload, const std::string& local_path,
                                              const std::string& uri, const NetworkOptions& options) {
    upload.path = local_path;
    posix::FileDescriptor file(::open(local_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!file.valid()) {
        return posix::errno_error(local_path, "cannot open the file to upload", errno);
    }
    struct stat facts {};
    if (::fstat(file.get(), &facts) != 0) {
        return posix::errno_error(local_path, "cannot stat the file to upload", errno);
    }
    upload.fd = file.get();
    upload.size_bytes = static_cast<std::uint64_t>(facts.st_size);
    upload.part_size_bytes = options.range_size_bytes != 0 ? options.range_size_bytes : s3_part_size_bytes_default;
    if (upload.part_size_bytes < s3_part_size_bytes_min) {
        return fail(errc::invalid_argument, uri + ": S3 parts must be at least 5 MiB, not " +
                                                std::to_string(upload.part_size_bytes) + " bytes");
    }
    while ((upload.size_bytes + upload.part_size_bytes - 1) / upload.part_size_bytes > s3_part_count_max) {
        upload.part_size_bytes *= 2;
    }
    upload.attempts = std::max<std::size_t>(options.attempts, 1);
    return file;
}

// One request: it replaces the object in one step, so it too appears whole or not at all.
Task<Result<std::string>> put_object(MultipartUpload& upload, S3Connection& control, const Endpoint& endpoint,
                                     std::string uri) {
    RL_CO_TRY(bytes, read_range(upload, 0, static_cast<std::size_t>(upload.size_bytes)));
    auto putting =
        control.send_with_retries("PUT", upload.object_target, bytes, "application/octet-stream", upload.attempts);
    S3Response put = co_await std::move(putting);
    if (!put.ok()) {
        co_return endpoint.failed(uri, "PutObject failed: " + put.failure);
    }
    co_return std::string("S3 PutObject");
}

// The uploads of this key begun before ours and never finished: a writer killed mid-way (kill
// -9, a lost machine) leaves its parts stored, and billed, until the upload is aborted. Listed
// before ours completes (while the listing still shows ours, and so when it began).
Task<std::vector<std::string>> stale_uploads(const MultipartUpload& upload, S3Connection& control,
                                             const Endpoint& endpoint) {
    const std::string listing_target =
        endpoint.bucket_target + "?prefix=" + sigv4_uri_encode(endpoint.key, false) + "&uploads=";
    auto listing = control.send_with_retries("GET", listing_target, {}, "", upload.attempts);
    S3Response listed = co_await std::move(listing);
    std::vector<std::string> stale;
    if (!listed.ok()) {
        co_return stale; // best effort: a server without the call, or no permission to list
    }
    const std::vector<S3PendingUpload> pending = s3_pending_uploads(listed.body);
    const auto ours = std::find_if(pending.begin(), pending.end(),
                                   [&](const S3PendingUpload& p) { return p.upload_id == upload.upload_id; });
    if (ours == pending.end() || ours->initiated.empty()) {
        co_return stale;
    }
    for (const S3PendingUpload& other : pending) {
        // ISO 8601 in one format compares as text; not after ours, as some servers (moto) give
        // every upload the same time. A writer that began before us and is still running loses
        // its upload (its completion then fails, clearly): the object is ours.
        if (other.key == endpoint.key && other.upload_id != upload.upload_id && !other.initiated.empty() &&
            other.initiated <= ours->initiated) {
            stale.push_back(other.upload_id);
        }
    }
    co_return stale;
}

// Aborts the stale uploads; says how many went ("" when none were there).
Task<std::string> abort_stale_uploads(const MultipartUpload& upload, S3Connection& control,
                                      std::vector<std::string> stale) {
    std::size_t aborted = 0;
    for (const std::string& upload_id : stale) {
        const std::string target = upload.object_target + "?uploadId=" + sigv4_uri_encode(upload_id, false);
        auto aborting = control.send_with_retries("DELETE", target, {}, "", upload.attempts);
        S3Response response = co_await std::move(aborting);
        aborted += response.ok() ? 1 : 0;
    }
    if (stale.empty()) {
        co_return std::string();
    }
    co_return "; aborted " + std::to_string(aborted) + " of " + std::to_string(stale.size()) +
        " unfinished earlier uploads of this key";
}

// CompleteMultipartUpload when every part went up, else (or when completing fails)
// AbortMultipartUpload, so that no parts stay stored. Once ours is complete, the unfinished
// uploads of the same key that began earlier are aborted too.
Task<Result<std::string>> finish_multipart(MultipartUpload& upload, S3Connection& control, const Endpoint& endpoint,
                                           std::string uri) {
    const std::string upload_target = upload.object_target + "?uploadId=" + sigv4_uri_encode(upload.upload_id, false);
    if (!upload.error) {
        auto listing = stale_uploads(upload, control, endpoint);
        std::vector<std::string> stale = co_await std::move(listing);
        const std::string body = complete_body(upload);
        auto completing =
            control.send_with_retries("POST", upload_target, bytes_of(body), "application/xml", upload.attempts);
        S3Response completed = co_await std::move(completing);
        // S3 may answer 200 and still fail: the error is then in the body.
        const std::string late_error = completed.ok() ? s3_error_summary(completed.body) : "";
        if (completed.ok() && late_error.empty()) {
            auto aborting = abort_stale_uploads(upload, control, std::move(stale));
            const std::string cleaned = co_await std::move(aborting);
            co_return "S3 multipart upload, " + std::to_string(upload.part_count) + " parts of " +
                mib(upload.part_size_bytes) + cleaned;
        }
        upload.error = "CompleteMultipartUpload failed: " + (late_error.empty() ? completed.failure : late_error);
    }
    auto aborting = control.send_with_retries("DELETE", upload_target, {}, "", upload.attempts);
    S3Response aborted = co_await std::move(aborting);
    co_return endpoint.failed(uri,
                              *upload.error + (aborted.ok() ? "; the upload was aborted, nothing was written"
                                                            : "; aborting the upload failed too (" + aborted.failure +
                                                                  "): its parts may stay stored until a "
                                                                  "lifecycle rule removes them"));
}

// CreateMultipartUpload, the parts on up to `connections` (at most 4) at once, then finish_multipart.
Task<Result<std::string>> upload_multipart(asio::io_context& loop, MultipartUpload& upload, S3Connection& control,
                                           const Endpoint& endpoint, std::string uri, std::size_t connections) {
    auto creating = control.send_with_retries("POST", upload.object_target + "?uploads=", {},
                                              "application/octet-stream", upload.attempts);
    S3Response created = co_await std::move(creating);
    upload.upload_id = created.ok() ? s3_xml_text(created.body, "UploadId") : "";
    if (upload.upload_id.empty()) {
        co_return endpoint.failed(uri,
                                  "CreateMultipartUpload failed: " +
                                      (created.ok() ? std::string("the answer has no UploadId") : created.failure));
    }
    upload.part_count =
        static_cast<std::size_t>((upload.size_bytes + upload.part_size_bytes - 1) / upload.part_size_bytes);
    upload.etags.resize(upload.part_count);

    std::vector<std::unique_ptr<S3Connection>> uploaders;
    const std::size_t uploader_count = std::clamp<std::size_t>(connections, 1, 4);
    for (std::size_t i = 0; i < std::min(uploader_count, upload.part_count); ++i) {
        uploaders.push_back(endpoint.connect(loop));
    }
    auto uploading = run_uploaders(loop, upload, uploaders);
    co_await std::move(uploading);
    auto finishing = finish_multipart(upload, control, endpoint, uri);
    co_return co_await std::move(finishing);
}

} // namespace

Task<Result<std::string>> upload_s3_object(asio::io_context& loop, std::string local_path, std::string uri,
                                           NetworkOptions options) {
    RL_CO_TRY(endpoint, endpoint_for(uri, options));
    MultipartUpload upload;
    RL_CO_TRY(file, open_for_upload(upload, local_path, uri, options));
    upload.object_target = endpoint.target;
    auto control = endpoint.connect(loop);
    if (upload.size_bytes <= upload.part_size_bytes) {
        auto putting = put_object(upload, *control, endpoint, uri);
        co_return co_await std::move(putting);
    }
    auto uploading = upload_multipart(loop, upload, *control, endpoint, uri, options.connections);
    co_return co_await std::move(uploading);
}

} // namespace ringload
