// io/include/ringload/io/s3_upload.hpp
//
// Puts a finished local file at s3://bucket/key. Files up to one part go up in one PutObject;
// larger ones by multipart upload: CreateMultipartUpload, the parts (16 MiB, or
// NetworkOptions::range_size_bytes, at least 5 MiB as S3 demands, more when the file would
// need over 10,000 parts) read from the file and sent on up to 4 connections at once, then
// CompleteMultipartUpload. Any failure aborts the upload (AbortMultipartUpload), so that no
// object and no stored parts are left: the object appears whole or not at all. A writer killed
// mid-way cannot abort its upload: once an upload completes, the unfinished uploads of the same
// key that began no later than it are aborted (ListMultipartUploads), so the next upload of a
// key cleans up after a killed one. (A lifecycle rule, AbortIncompleteMultipartUpload, catches
// keys never written again.)
//
//     RL_TRY(how, run_on_loop(loop, upload_s3_object(loop, "/tmp/m.tensors", "s3://b/m.tensors", network)));
//     // how == "S3 multipart upload, 3 parts of 16 MiB"
//
// Thread: the loop thread.
#pragma once

#include "ringload/engine/task.hpp"
#include "ringload/error.hpp"
#include "ringload/io/network_options.hpp"

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <string>

namespace ringload {

inline constexpr std::size_t s3_part_size_bytes_default = 16 << 20;
inline constexpr std::size_t s3_part_size_bytes_min = 5 << 20; // S3's limit for every part but the last
inline constexpr std::size_t s3_part_count_max = 10'000;

// Says how it went ("S3 PutObject" or "S3 multipart upload, N parts of M MiB").
Task<Result<std::string>> upload_s3_object(asio::io_context& loop, std::string local_path, std::string uri,
                                           NetworkOptions options);

} // namespace ringload
