// io/include/ringload/io/s3_xml.hpp
//
// The little of S3's XML answers that ringload reads: an element's text, and the uploads a
// ListMultipartUploads answer names. Not a general XML parser: S3's answers are flat and
// machine-written; what is not understood yields "" or nothing, never a failure.
//
//     s3_xml_text("<Error><Code>NoSuchKey</Code></Error>", "Code") == "NoSuchKey"
//     for (const S3PendingUpload& upload : s3_pending_uploads(listing)) { ... upload.upload_id ... }
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ringload {

// The text of the first <name>...</name> in `xml`, CDATA unwrapped and the five predefined
// entities (&amp; &lt; &gt; &quot; &apos;) decoded; "" when there is none.
std::string s3_xml_text(std::string_view xml, std::string_view name);

// One <Upload> of a ListMultipartUploads answer: begun and neither completed nor aborted.
struct S3PendingUpload {
    std::string key;
    std::string upload_id;
    std::string initiated; // ISO 8601 as the server wrote it ("2026-11-28T03:00:00.000Z")
};

std::vector<S3PendingUpload> s3_pending_uploads(std::string_view xml);

} // namespace ringload
