// tests/io/url_test.cpp
//
// parse_http_url on the URLs the sources meet (ports, IPv6 literals, queries, fragments) and
// the ones they refuse, and uri_for_messages hiding a password.
#include "ringload/io/url.hpp"

#include <gtest/gtest.h>

namespace ringload {
namespace {

TEST(Url, SplitsSchemeHostPortAndTarget) {
    auto url = parse_http_url("http://host:8080/models/a.tensors?x=1");
    ASSERT_TRUE(url) << url.error().message();
    EXPECT_EQ(url->scheme, "http");
    EXPECT_EQ(url->host, "host");
    EXPECT_EQ(url->port, "8080");
    EXPECT_EQ(url->target, "/models/a.tensors?x=1");
    EXPECT_EQ(url->host_header, "host:8080");
    EXPECT_EQ(url->text(), "http://host:8080/models/a.tensors?x=1");
}

TEST(Url, DefaultPortsTargetAndSchemeCase) {
    auto https = parse_http_url("HTTPS://example.com");
    ASSERT_TRUE(https);
    EXPECT_EQ(https->scheme, "https");
    EXPECT_EQ(https->port, "443");
    EXPECT_EQ(https->target, "/");
    EXPECT_EQ(https->host_header, "example.com");
    auto http = parse_http_url("http://example.com?q=1#part");
    ASSERT_TRUE(http);
    EXPECT_EQ(http->port, "80");
    EXPECT_EQ(http->target, "/?q=1"); // the fragment never goes to the server
}

TEST(Url, Ipv6LiteralKeepsBracketsOnlyInTheHostHeader) {
    auto url = parse_http_url("http://[::1]:9000/b/k");
    ASSERT_TRUE(url) << url.error().message();
    EXPECT_EQ(url->host, "::1");
    EXPECT_EQ(url->port, "9000");
    EXPECT_EQ(url->host_header, "[::1]:9000");
    auto no_port = parse_http_url("https://[fe80::2]/x");
    ASSERT_TRUE(no_port);
    EXPECT_EQ(no_port->host, "fe80::2");
    EXPECT_EQ(no_port->port, "443");
}

TEST(Url, Refusals) {
    EXPECT_EQ(parse_http_url("example.com/a").error().code, errc::invalid_argument);
    EXPECT_EQ(parse_http_url("ftp://example.com/a").error().code, errc::unsupported);
    EXPECT_EQ(parse_http_url("http:///a").error().code, errc::invalid_argument);
    EXPECT_EQ(parse_http_url("http://[::1/a").error().code, errc::invalid_argument);
    EXPECT_EQ(parse_http_url("http://[::1]x/a").error().code, errc::invalid_argument);
    EXPECT_EQ(parse_http_url("http://host:80a/").error().code, errc::invalid_argument);
    auto credentials = parse_http_url("http://user:secret@host/a");
    ASSERT_FALSE(credentials);
    EXPECT_EQ(credentials.error().code, errc::unsupported);
    EXPECT_EQ(credentials.error().detail.find("secret"), std::string::npos);
}

TEST(Url, MessagesHideThePasswordOnly) {
    EXPECT_EQ(uri_for_messages("redis://u:secret@h:6379/p"), "redis://u:***@h:6379/p");
    EXPECT_EQ(uri_for_messages("redis://:secret@h/p"), "redis://:***@h/p");
    EXPECT_EQ(uri_for_messages("redis://u@h/p"), "redis://u@h/p");
    EXPECT_EQ(uri_for_messages("http://h:80/a@b"), "http://h:80/a@b"); // '@' in the path
    EXPECT_EQ(uri_for_messages("not a uri"), "not a uri");
}

} // namespace
} // namespace ringload
