// io/src/gcs_upload.cpp
//
// upload_gcs_object (gcs_source.hpp): a resumable upload, as GCS documents it:
//   POST {endpoint}/upload/storage/v1/b/BUCKET/o?uploadType=resumable&name=OBJECT
//        -> 200, Location: the session URL (a credential itself: never in a message)
//   PUT  session, Content-Range: bytes 0-16777215/*          -> 308, Range: bytes=0-16777215
//   PUT  session, Content-Range: bytes 16777216-20000000/20000001  -> 200 or 201: the object
// A failed PUT (no answer, 429, 5xx) is followed by a status query (PUT, no body,
// Content-Range: bytes */TOTAL), whose 308 Range says where to go on from. Until the last chunk
// is in there is no object; a failed upload is cancelled (DELETE session).
#include "gcs_access.hpp"
#include "gcs_error.hpp"
#include "http_object.hpp"
#include "posix_file.hpp"
#include "retry_policy.hpp"
#include "ringload/io/gcs_source.hpp"
#include "ringload/printable.hpp"
#include "tls_context.hpp"

#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <optional>
#include <vector>

namespace ringload {
namespace {

struct ResumableUpload {
    posix::FileDescriptor file;
    std::string path;
    std::uint64_t size_bytes = 0;
    std::size_t chunk_size_bytes = 0;
    std::size_t attempts = 1;
    std::string session_target;        // the session URL's path and query
    std::uint64_t persisted_bytes = 0; // what the session holds: the next chunk starts there
    bool finished = false;
    std::vector<std::byte> chunk; // the bytes of the chunk in flight
};

std::string size_text(std::uint64_t bytes) {
    return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

std::size_t chunk_count(const ResumableUpload& upload) {
    return static_cast<std::size_t>(
        std::max<std::uint64_t>((upload.size_bytes + upload.chunk_size_bytes - 1) / upload.chunk_size_bytes, 1));
}

Result<void> open_for_upload(ResumableUpload& upload, const std::string& local_path, const NetworkOptions& network) {
    upload.path = local_path;
    // The range size is a read setting (a multiple of 4096 bytes): rounded up to a multiple of
    // 256 KiB, the only chunk size GCS takes.
    const std::size_t wanted = network.range_size_bytes != 0 ? network.range_size_bytes : gcs_chunk_size_bytes_default;
    upload.chunk_size_bytes =
        (wanted + gcs_chunk_granularity_bytes - 1) / gcs_chunk_granularity_bytes * gcs_chunk_granularity_bytes;
    upload.attempts = std::max<std::size_t>(network.attempts, 1);
    upload.file = posix::FileDescriptor(::open(local_path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!upload.file.valid()) {
        return posix::errno_error(local_path, "cannot open the file to upload", errno);
    }
    struct stat facts {};
    if (::fstat(upload.file.get(), &facts) != 0) {
        return posix::errno_error(local_path, "cannot stat the file to upload", errno);
    }
    upload.size_bytes = static_cast<std::uint64_t>(facts.st_size);
    return {};
}

Result<void> read_chunk(ResumableUpload& upload, std::uint64_t offset, std::size_t length) {
    upload.chunk.resize(length);
    std::size_t got = 0;
    while (got < length) {
        RL_TRY(n, posix::pread_some(upload.file.get(), upload.chunk.data() + got, length - got, offset + got,
                                    upload.path));
        if (n == 0) {
            return fail(errc::io_error, upload.path + ": the file shrank while it was being uploaded");
        }
        got += n;
    }
    return {};
}

// The next chunk from where the session is: "bytes A-B/*", or "bytes A-B/TOTAL" for the last
// (an empty file: "bytes */0").
Task<HttpResponse> put_next_chunk(ResumableUpload& upload, HttpConnection& session) {
    const std::uint64_t offset = upload.persisted_bytes;
    const auto length =
        static_cast<std::size_t>(std::min<std::uint64_t>(upload.chunk_size_bytes, upload.size_bytes - offset));
    HttpRequest request{"PUT", upload.session_target, {}, "", {}};
    if (auto read = read_chunk(upload, offset, length); !read) {
        HttpResponse failed;
        failed.failure = read.error().detail;
        failed.headers_failed = true; // not worth another try
        co_return failed;
    }
    const bool last = offset + length == upload.size_bytes;
    const std::string total = last ? std::to_string(upload.size_bytes) : "*";
    request.headers.emplace_back("Content-Range", length == 0 ? "bytes */" + total
                                                              : "bytes " + std::to_string(offset) + "-" +
                                                                    std::to_string(offset + length - 1) + "/" + total);
    request.body = upload.chunk;
    auto sending = session.send(std::move(request));
    co_return co_await std::move(sending);
}

// Asks the session what it holds, after a PUT that failed.
Task<HttpResponse> query_session(ResumableUpload& upload, HttpConnection& session) {
    HttpRequest request{"PUT", upload.session_target, {}, "", {}};
    request.headers.emplace_back("Content-Range", "bytes */" + std::to_string(upload.size_bytes));
    auto sending = session.send(std::move(request));
    co_return co_await std::move(sending);
}

// A 200/201 (the object is made) or a 308 (Range: bytes=0-N: the session holds N + 1 bytes).
Result<void> take_progress(ResumableUpload& upload, const HttpResponse& response) {
    if (response.status != 308) {
        const auto json = nlohmann::json::parse(response.body, nullptr, false);
        const auto size = json.is_object() ? json.find("size") : json.end();
        if (size != json.end() && size->is_string() && size->get<std::string>() != std::to_string(upload.size_bytes)) {
            return fail(errc::io_error, "the object made has " + size->get<std::string>() + " bytes, not " +
                                            std::to_string(upload.size_bytes));
        }
        upload.finished = true;
        return {};
    }
    upload.persisted_bytes = 0;
    if (!response.range.empty()) {
        const std::string_view range = response.range;
        const auto dash = range.find('-');
        // No optional here: g++ 12 at -O2 saw one as maybe-uninitialized. Unparsable is "past the end".
        constexpr std::uint64_t unparsable = std::numeric_limits<std::uint64_t>::max();
        const std::uint64_t last = dash == std::string_view::npos
                                       ? unparsable
                                       : http_object::parse_number(range.substr(dash + 1)).value_or(unparsable);
        if (!range.starts_with("bytes=0-") || last >= upload.size_bytes) {
            return fail(errc::io_error, "the session answered 308 with Range '" + printable(range, 100) + "'");
        }
        upload.persisted_bytes = last + 1;
    }
    return {};
}

// Chunks until the object is made. A chunk that fails retryably, or that a 308 shows did not
// get through, counts as a failure; `attempts` failures in a row end the upload.
Task<Result<void>> send_chunks(ResumableUpload& upload, HttpConnection& session) {
    Backoff backoff;
    std::size_t failures = 0;
    bool query = false;
    while (!upload.finished) {
        const std::uint64_t before = upload.persisted_bytes;
        auto sending = query ? query_session(upload, session) : put_next_chunk(upload, session);
        HttpResponse response = co_await std::move(sending);
        const bool answered = response.status == 200 || response.status == 201 || response.status == 308;
        if (answered) {
            RL_CO_TRY_VOID(take_progress(upload, response));
        }
        const bool moved_on = upload.finished || upload.persisted_bytes > before;
        if (answered && (moved_on || query)) {
            failures = moved_on ? 0 : failures;
            query = false;
            continue;
        }
        if (answered) {
            response.failure = "the session did not take the chunk at byte " + std::to_string(before);
        } else if (!response.retryable()) {
            co_return fail(errc::io_error, response.failure);
        }
        if (++failures >= upload.attempts) {
            co_return fail(errc::io_error,
                           response.failure + " (gave up after " + std::to_string(failures) + " attempts)");
        }
        http_object::ResponseFacts facts;
        facts.retry_after = response.retry_after;
        auto pause = pause_before_retry(backoff, failures, http_object::retry_after_of(facts));
        co_await std::move(pause);
        query = true;
    }
    co_return Result<void>();
}

// POST: the session's URL, from Location (absolute, or a path on the endpoint).
Task<Result<Url>> begin_session(const GcsAccess& access, const ResumableUpload& upload, HttpConnection& control,
                                std::string upload_url) {
    RL_CO_TRY(url, parse_http_url(upload_url));
    HttpRequest request{"POST", url.target, {}, "", {}};
    request.headers = {{"X-Upload-Content-Type", "application/octet-stream"},
                       {"X-Upload-Content-Length", std::to_string(upload.size_bytes)}};
    auto sending = control.send_with_retries(std::move(request), upload.attempts);
    HttpResponse response = co_await std::move(sending);
    if (!response.ok() || response.location.empty()) {
        const std::string why = response.ok() ? "the answer has no Location" : response.failure;
        co_return gcs_failure(access,
                              fail(errc::io_error, upload_url + ": starting the resumable upload failed: " + why));
    }
    auto session = http_object::resolve_redirect(control.origin(), response.location, upload_url);
    if (!session) {
        co_return gcs_failure(access, fail(errc::io_error, upload_url + ": the upload session's URL is not usable"));
    }
    co_return std::move(*session);
}

// DELETE: the session is dropped (GCS answers 499). Says what became of it.
Task<std::string> cancel_session(ResumableUpload& upload, HttpConnection& session) {
    HttpRequest request{"DELETE", upload.session_target, {}, "", {}};
    auto sending = session.send_with_retries(std::move(request), std::min<std::size_t>(upload.attempts, 2));
    HttpResponse response = co_await std::move(sending);
    if (response.status == 499 || response.ok() || response.status == 404 || response.status == 410) {
        co_return std::string("the upload was cancelled, nothing was written");
    }
    co_return "cancelling the upload failed too (" + response.failure +
        "), but nothing was written: GCS makes no object from an unfinished upload";
}

HttpConnectionSettings connection_settings(const GcsAccess& access, const NetworkOptions& network) {
    HttpConnectionSettings settings;
    settings.timeout = std::chrono::milliseconds(static_cast<long long>(network.timeout_seconds * 1000));
    settings.insecure = network.insecure;
    settings.headers = [tokens = access.tokens](Url, std::string, std::span<const std::byte>) {
        return gcs_authorization(tokens);
    };
    settings.explain_error = [](unsigned, std::string_view body) { return gcs_error_summary(body); };
    return settings;
}

} // namespace

Task<Result<std::string>> upload_gcs_object(asio::io_context& loop, std::string local_path, std::string uri,
                                            NetworkOptions network) {
    RL_CO_TRY(plan, plan_gcs_access(std::move(uri), network, process_environment(), gcs_read_write_scope));
    ResumableUpload upload;
    if (auto opened = open_for_upload(upload, local_path, network); !opened) {
        co_return with_context(std::move(opened).error(), plan.uri);
    }
    auto starting = start_gcs_access(loop, std::move(plan));
    RL_CO_TRY(access, co_await std::move(starting));
    const std::string upload_url = gcs_resumable_upload_url(access.endpoint, access.location);
    RL_CO_TRY(origin, parse_http_url(access.endpoint));
    std::unique_ptr<asio::ssl::context> tls;
    if (origin.scheme == "https") {
        RL_CO_TRY(context, make_client_tls_context(network.ca_file, network.insecure));
        tls = std::move(context);
    }
    HttpConnection control(loop, tls.get(), origin, connection_settings(access, network));
    auto beginning = begin_session(access, upload, control, upload_url);
    RL_CO_TRY(session_url, co_await std::move(beginning));
    upload.session_target = session_url.target;
    // The session may live on another host than the endpoint: then it gets its own connection.
    std::optional<HttpConnection> elsewhere;
    if (session_url.host_header != origin.host_header) {
        elsewhere.emplace(loop, tls.get(), session_url, connection_settings(access, network));
    }
    HttpConnection& session = elsewhere ? *elsewhere : control;
    auto sending = send_chunks(upload, session);
    auto sent = co_await std::move(sending);
    if (!sent) {
        auto cancelling = cancel_session(upload, session);
        const std::string cancelled = co_await std::move(cancelling);
        co_return gcs_failure(access, fail(errc::io_error, upload_url + ": GCS resumable upload failed at byte " +
                                                               std::to_string(upload.persisted_bytes) + " of " +
                                                               std::to_string(upload.size_bytes) + ": " +
                                                               sent.error().detail + "; " + cancelled));
    }
    const std::size_t chunks = chunk_count(upload);
    co_return "GCS resumable upload, " + std::to_string(chunks) +
        (chunks == 1 ? " chunk of " + size_text(upload.size_bytes)
                     : " chunks of " + size_text(upload.chunk_size_bytes));
}

} // namespace ringload
