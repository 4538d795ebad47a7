// tests/io/s3_xml_test.cpp: the S3 XML answers ringload reads (element text, pending uploads).
#include "ringload/io/s3_xml.hpp"

#include <gtest/gtest.h>

namespace ringload {
namespace {

TEST(S3Xml, TextDecodesEntitiesAndUnwrapsCdata) {
    EXPECT_EQ(s3_xml_text("<Key>a&amp;b &lt;c&gt; &quot;d&quot; &apos;e&apos; &amp;amp;</Key>", "Key"),
              "a&b <c> \"d\" 'e' &amp;");
    EXPECT_EQ(s3_xml_text("<Message><![CDATA[x &amp; y]]></Message>", "Message"), "x &amp; y"); // CDATA is literal
    EXPECT_EQ(s3_xml_text("<Key>unterminated", "Key"), "");
    EXPECT_EQ(s3_xml_text("<Other>x</Other>", "Key"), "");
    EXPECT_EQ(s3_xml_text("<Key>&unknown; &amp</Key>", "Key"), "&unknown; &amp");
}

TEST(S3Xml, PendingUploadsOfAListing) {
    const std::string listing = R"(<?xml version="1.0" encoding="UTF-8"?>
<ListMultipartUploadsResult><Bucket>models</Bucket><Prefix>gpt/m&amp;m.tensors</Prefix>
<Upload><Key>gpt/m&amp;m.tensors</Key><UploadId>id-1</UploadId><Initiated>2026-11-28T03:00:00.000Z</Initiated></Upload>
<Upload><Key>gpt/m&amp;m.tensors.old</Key><UploadId>id-2</UploadId><Initiated>2026-11-28T02:00:00.000Z</Initiated></Upload>
<Upload><Key>no id</Key></Upload>
<Upload><Key>cut</Key><UploadId>id-3</UploadId>)";
    const auto uploads = s3_pending_uploads(listing);
    ASSERT_EQ(uploads.size(), 2u); // the one without an id and the cut one are not uploads
    EXPECT_EQ(uploads[0].key, "gpt/m&m.tensors");
    EXPECT_EQ(uploads[0].upload_id, "id-1");
    EXPECT_EQ(uploads[0].initiated, "2026-11-28T03:00:00.000Z");
    EXPECT_EQ(uploads[1].key, "gpt/m&m.tensors.old");
    EXPECT_TRUE(s3_pending_uploads("<ListMultipartUploadsResult/>").empty());
}

} // namespace
} // namespace ringload
