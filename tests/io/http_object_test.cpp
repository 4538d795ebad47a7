// tests/io/http_object_test.cpp
//
// What both HTTP sources share about the object behind a URL (io/src/http_object.hpp):
// Content-Range parsing, the size and validator pinned by the first answer and checked on every
// later one, where redirects lead, and Retry-After.
#include "http_object.hpp"

#include <gtest/gtest.h>

namespace ringload::http_object {
namespace {

ResponseFacts range_answer(std::string content_range, std::string etag = "\"v1\"") {
    ResponseFacts facts;
    facts.status = 206;
    facts.reason = "Partial Content";
    facts.content_range = std::move(content_range);
    facts.etag = std::move(etag);
    return facts;
}

TEST(ContentRange, ParsesFirstLastAndTotal) {
    auto range = parse_content_range("bytes 0-99/1000");
    ASSERT_TRUE(range);
    EXPECT_EQ(range->first, 0u);
    EXPECT_EQ(range->last, 99u);
    EXPECT_EQ(range->total, 1000u);
    auto unknown = parse_content_range("bytes 5-9/*");
    ASSERT_TRUE(unknown);
    EXPECT_FALSE(unknown->total);
}

TEST(ContentRange, RefusesMalformedOnes) {
    for (const char* text : {"", "bytes", "items 0-1/2", "bytes 0-1", "bytes 1/2", "bytes 9-1/20", "bytes a-1/2",
                             "bytes 0-1/x", "bytes 0-1/2 ", "bytes -1-2/3", "bytes 0-1/2/3"}) {
        EXPECT_FALSE(parse_content_range(text)) << text;
    }
}

TEST(PinnedObject, FirstAnswerPinsSizeAndValidator) {
    PinnedObject object("http://h/m");
    EXPECT_FALSE(object.known());
    EXPECT_EQ(object.readable_length(123, 8), 8u); // size unknown: all of it
    ASSERT_TRUE(object.check_range(range_answer("bytes 0-0/100"), 0, 1));
    EXPECT_TRUE(object.known());
    EXPECT_EQ(object.size_bytes(), 100u);
    EXPECT_EQ(object.readable_length(96, 8), 4u);
    EXPECT_EQ(object.readable_length(100, 8), 0u);
    EXPECT_TRUE(object.check_range(range_answer("bytes 10-19/100"), 10, 10));
}

TEST(PinnedObject, ChangedSizeOrValidatorFailsTheLoad) {
    PinnedObject object("http://h/m");
    ASSERT_TRUE(object.check_range(range_answer("bytes 0-0/100"), 0, 1));
    auto resized = object.check_range(range_answer("bytes 0-9/200"), 0, 10);
    ASSERT_FALSE(resized);
    EXPECT_NE(resized.error().detail.find("object changed while loading (size 100 -> 200)"), std::string::npos);
    auto retagged = object.check_range(range_answer("bytes 0-9/100", "\"v2\""), 0, 10);
    ASSERT_FALSE(retagged);
    EXPECT_NE(retagged.error().detail.find("ETag \"v1\" -> \"v2\""), std::string::npos);
}

TEST(PinnedObject, LastModifiedWhenThereIsNoETag) {
    PinnedObject object("http://h/m");
    ResponseFacts first = range_answer("bytes 0-0/10", "");
    first.last_modified = "Mon, 01 Jan 2024 00:00:00 GMT";
    ASSERT_TRUE(object.check_range(first, 0, 1));
    ResponseFacts later = first;
    later.last_modified = "Tue, 02 Jan 2024 00:00:00 GMT";
    auto changed = object.check_range(later, 0, 1);
    ASSERT_FALSE(changed);
    EXPECT_NE(changed.error().detail.find("Last-Modified"), std::string::npos);
}

TEST(PinnedObject, StatusesOtherThan206) {
    PinnedObject object("http://h/m");
    ResponseFacts missing;
    missing.status = 404;
    missing.reason = "Not Found";
    auto not_found = object.check_range(missing, 0, 1);
    ASSERT_FALSE(not_found);
    EXPECT_EQ(not_found.error().code, errc::not_found);
    EXPECT_EQ(not_found.error().detail, "http://h/m: HTTP 404 Not Found");
    ResponseFacts whole;
    whole.status = 200;
    EXPECT_NE(object.check_range(whole, 0, 1).error().detail.find("ignored the Range header"), std::string::npos);
    ResponseFacts busy;
    busy.status = 503;
    EXPECT_EQ(object.check_range(busy, 8, 4).error().detail, "http://h/m: bytes 8-11: HTTP 503");
    ResponseFacts lost; // a redirect the sources could not follow (one with a Location is followed)
    lost.status = 301;
    lost.reason = "Moved Permanently";
    EXPECT_EQ(object.check_range(lost, 8, 4).error().detail, "http://h/m: bytes 8-11: HTTP 301 without a Location");
    auto elsewhere = object.check_range(range_answer("bytes 1-1/10"), 0, 1); // not where asked
    ASSERT_FALSE(elsewhere);
    EXPECT_NE(elsewhere.error().detail.find("Content-Range 'bytes 1-1/10'"), std::string::npos);
    EXPECT_FALSE(object.check_range(range_answer("bytes 0-0/*"), 0, 1)); // no total
}

TEST(PinnedObject, WholeObjectAnswers) {
    PinnedObject object("http://h/m");
    ResponseFacts whole;
    whole.status = 200;
    whole.etag = "\"e\"";
    object.pin_whole(500, whole);
    EXPECT_TRUE(object.known());
    EXPECT_EQ(object.size_bytes(), 500u);
    EXPECT_TRUE(object.same_whole(500, whole));
    EXPECT_FALSE(object.same_whole(501, whole));
    whole.etag = "\"f\"";
    EXPECT_FALSE(object.same_whole(500, whole));
}

TEST(Redirect, ResolvesEveryFormOfLocation) {
    auto from = parse_http_url("https://a.example:8443/dir/file.bin?sig=1");
    ASSERT_TRUE(from);
    EXPECT_EQ(resolve_redirect(*from, "https://b.example/x", "n")->text(), "https://b.example/x");
    EXPECT_EQ(resolve_redirect(*from, "//c.example:9/y", "n")->text(), "https://c.example:9/y");
    EXPECT_EQ(resolve_redirect(*from, "/root?q", "n")->text(), "https://a.example:8443/root?q");
    EXPECT_EQ(resolve_redirect(*from, "other.bin", "n")->text(), "https://a.example:8443/dir/other.bin");
}

TEST(Redirect, RefusesOtherSchemesAndBadUrls) {
    auto from = parse_http_url("https://a.example/m");
    ASSERT_TRUE(from);
    auto downgrade = resolve_redirect(*from, "http://a.example/m", "name");
    ASSERT_FALSE(downgrade);
    EXPECT_EQ(downgrade.error().code, errc::unsupported);
    auto bad = resolve_redirect(*from, "ftp://a.example/m", "name");
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().detail.rfind("name: a redirect to an unusable URL", 0), 0u);
}

TEST(Redirect, Statuses) {
    for (unsigned status : {301u, 302u, 303u, 307u, 308u}) {
        EXPECT_TRUE(is_redirect(status)) << status;
    }
    for (unsigned status : {200u, 206u, 300u, 304u, 305u, 404u}) {
        EXPECT_FALSE(is_redirect(status)) << status;
    }
}

TEST(RetryAfter, SecondsOnly) {
    ResponseFacts facts;
    facts.retry_after = "7";
    EXPECT_EQ(retry_after_of(facts), std::chrono::seconds(7));
    facts.retry_after = "Wed, 21 Oct 2015 07:28:00 GMT";
    EXPECT_EQ(retry_after_of(facts), std::chrono::milliseconds(0));
    facts.retry_after = "";
    EXPECT_EQ(retry_after_of(facts), std::chrono::milliseconds(0));
}

} // namespace
} // namespace ringload::http_object
