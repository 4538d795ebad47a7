// tests/engine/printable_test.cpp
//
// Untrusted text made inert (issue #27, part 5): terminal escapes, bidi overrides and bytes
// that are not UTF-8 come out as escapes, valid UTF-8 as it is, long values cut with a note,
// secret query parameters redacted; and Error::message applies all of it.
#include "ringload/printable.hpp"
#include "ringload/error.hpp"

#include <gtest/gtest.h>

#include <string>

namespace ringload {
namespace {

TEST(Printable, TerminalEscapesAndControlCharactersBecomeVisibleEscapes) {
    EXPECT_EQ(printable("\x1b[31mred\x1b[0m"), "\\u{1b}[31mred\\u{1b}[0m");
    EXPECT_EQ(printable("\x1b]0;pwned\x07title"), "\\u{1b}]0;pwned\\u{7}title");
    EXPECT_EQ(printable(std::string("a\0b\n\r\t\x7f", 7)), "a\\u{0}b\\u{a}\\u{d}\\u{9}\\u{7f}");
    EXPECT_EQ(printable("\xc2\x9b"
                        "31m"),
              "\\u{9b}31m"); // C1 CSI, as UTF-8
}

TEST(Printable, ValidUtf8StaysReadableAndBidiOverridesAreEscaped) {
    EXPECT_EQ(printable("模型.层.0.weight"), "模型.层.0.weight");
    EXPECT_EQ(printable("caf\xc3\xa9 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xf0\x9f\x98\x80");
    EXPECT_EQ(printable("\xe2\x80\xae"
                        "evil"),
              "\\u{202e}evil");                          // RIGHT-TO-LEFT OVERRIDE
    EXPECT_EQ(printable("\xe2\x81\xa6x"), "\\u{2066}x"); // LEFT-TO-RIGHT ISOLATE
}

TEST(Printable, BytesThatAreNotUtf8AreHexEscapes) {
    EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");
    EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");          // an overlong '/'
    EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80"); // a UTF-16 surrogate
    EXPECT_EQ(printable("ok\xe6\xa8"), "ok\\xe6\\xa8");      // cut inside a sequence
}

TEST(Printable, IsIdempotentAndCutsLongValuesWithANote) {
    const std::string hostile = "\x1b[2J\xff name \\u{1b}";
    EXPECT_EQ(printable(printable(hostile)), printable(hostile));
    const std::string cut = printable(std::string(5000, 'x'), 200);
    EXPECT_EQ(cut, std::string(200, 'x') + "...(4800 more bytes)");
}

TEST(RedactSecrets, SignedQueryParametersAreRedactedWhereverAUrlAppears) {
    EXPECT_EQ(redact_secrets("https://b.s3.amazonaws.com/m?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                             "&X-Amz-Credential=AKIA%2F20261127&X-Amz-Signature=abcdef0123&x-id=GetObject"),
              "https://b.s3.amazonaws.com/m?X-Amz-Algorithm=AWS4-HMAC-SHA256"
              "&X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED&x-id=GetObject");
    EXPECT_EQ(redact_secrets("io_error: https://a.blob.core.windows.net/c/m?sv=2022&sig=S3CR3T%3D: refused"),
              "io_error: https://a.blob.core.windows.net/c/m?sv=2022&sig=REDACTED: refused");
    EXPECT_EQ(redact_secrets("'https://h/m?token=t0k&X-Goog-Signature=g00g'"),
              "'https://h/m?token=REDACTED&X-Goog-Signature=REDACTED'");
    EXPECT_EQ(redact_secrets("https://h/m?signature_version=4&design=1"), "https://h/m?signature_version=4&design=1");
    EXPECT_EQ(redact_secrets("no query here & sig=x"), "no query here & sig=x");
}

TEST(ErrorMessage, IsInertAndCarriesNoSignature) {
    const Error error = fail(errc::io_error, "https://h/m?X-Amz-Signature=deadbeef: HTTP 403 \x1b[31mDenied\xff");
    EXPECT_EQ(error.message(), "I/O error: https://h/m?X-Amz-Signature=REDACTED: HTTP 403 \\u{1b}[31mDenied\\xff");
    const Error huge = fail(errc::format_error, "tensor '" + std::string(100000, 'n') + "'");
    EXPECT_LT(huge.message().size(), 4200U);
    EXPECT_NE(huge.message().find("more bytes)"), std::string::npos);
}

} // namespace
} // namespace ringload
