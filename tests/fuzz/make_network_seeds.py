#!/usr/bin/env python3
# tests/fuzz/make_network_seeds.py: writes the seeds of resp_fuzz, http1_fuzz, http2_fuzz and
# s3_config_fuzz into tests/fuzz/seeds/<resp|http1|http2|s3_config>/ (run it after changing the
# script format in scripted_server.hpp or what the targets ask for; the files are committed).
#
# Each seed is [flags byte][script]: chunks of what the server sends, "\n~~wait~~\n" between the
# answers to one request and the next, "\n~~connection~~\n" between connections (see
# scripted_server.hpp). The targets read an object of 16 bytes in this order: open (Redis: SCAN,
# STRLENs; HTTP: the probe for bytes 0-65535), a small read at 0, a read at size/2 and one at
# 0 (side by side with flag bit "side by side"), then one more at 0.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
WAIT = b"\n~~wait~~\n"
CONNECTION = b"\n~~connection~~\n"
OBJECT = b"0123456789abcdef"  # 16 bytes


def write(folder, name, data):
    path = os.path.join(HERE, "seeds", folder)
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, name), "wb") as out:
        out.write(data)


def script(flags, *connections):
    """connections: lists of chunks (bytes)."""
    return bytes([flags]) + CONNECTION.join(WAIT.join(chunks) for chunks in connections)


# ---- Redis (RESP) ----
def bulk(data):
    return b"$%d\r\n%s\r\n" % (len(data), data)


def array(*items):
    return b"*%d\r\n" % len(items) + b"".join(items)


def resp_seeds():
    scan = array(bulk(b"0"), array(bulk(b"m:header:0"), bulk(b"m:w:10")))
    strlens = b":10\r\n:6\r\n"
    whole = bulk(OBJECT[:10]) + bulk(OBJECT[10:])
    middle = bulk(OBJECT[8:10]) + bulk(OBJECT[10:])  # the read at size/2 = 8
    load = [scan, strlens, whole, middle, whole, whole]
    write("resp", "load", script(ord("0"), load))
    write("resp", "auth_then_load", script(ord("1"), [b"+OK\r\n"] + load))
    write("resp", "auth_refused", script(ord("1"), [b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"]))
    two_pages = [array(bulk(b"17"), array(bulk(b"m:w:10"))), array(bulk(b"0"), array(bulk(b"m:header:0"), bulk(b"m:w:10")))]
    write("resp", "scan_two_pages", script(ord("0"), two_pages + load[1:]))
    write("resp", "side_by_side", script(ord("2"), load[:3] + [middle, whole], [whole, whole]))
    write("resp", "key_changed_size", script(ord("0"), load[:3] + [bulk(b"89") + bulk(b"abcdefg")]))
    write("resp", "nil_and_error", script(ord("0"), load[:2] + [b"$-1\r\n-ERR no such key\r\n"]))
    write("resp", "strlen_wrongtype", script(ord("0"), [scan, b":10\r\n-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"]))
    write("resp", "gap_in_keys", script(ord("0"), [array(bulk(b"0"), array(bulk(b"m:header:0"), bulk(b"m:w:12"), bulk(b"m:x:notanumber"))), b":10\r\n:6\r\n"]))
    write("resp", "huge_claims", script(ord("0"), [array(bulk(b"0"), array(bulk(b"m:header:0"), bulk(b"m:w:10"))), b":10\r\n:9223372036854775807\r\n", b"$4611686018427387904\r\n0123"]))
    write("resp", "nested_and_status", script(ord("0"), [b"*2\r\n+0\r\n*3\r\n*1\r\n:1\r\n$-1\r\n$10\r\nm:header:0\r\n", b":16\r\n", bulk(OBJECT)]))


# ---- HTTP/1.1 ----
def response(status, headers, body=b"", reason=None):
    reasons = {200: b"OK", 206: b"Partial Content", 302: b"Found", 403: b"Forbidden", 503: b"Service Unavailable"}
    head = b"HTTP/1.1 %d %s\r\n" % (status, reason or reasons.get(status, b"Whatever"))
    head += b"".join(b"%s: %s\r\n" % (k, v) for k, v in headers)
    return head + b"\r\n" + body


def partial(first, last, etag=b'"v1"', total=16):
    body = OBJECT[first : last + 1]
    return response(206, [(b"Content-Range", b"bytes %d-%d/%d" % (first, last, total)), (b"Content-Length", b"%d" % len(body)), (b"ETag", etag)], body)


def http1_seeds():
    load = [partial(0, 15), partial(8, 15), partial(0, 15), partial(0, 15)]
    write("http1", "range_keepalive", script(ord("0"), load))
    whole = response(200, [(b"Content-Length", b"16"), (b"Last-Modified", b"Sat, 28 Nov 2026 02:00:00 GMT")], OBJECT)
    write("http1", "ignores_range", script(ord("0"), [whole], [whole], [whole], [whole]))
    redirect = response(302, [(b"Location", b"http://mirror.example:8080/other/m.bin?sig=abc"), (b"Content-Length", b"0")])
    write("http1", "redirect_elsewhere", script(ord("0"), [redirect], load))
    relative = response(302, [(b"Location", b"../m2.bin"), (b"Content-Length", b"5")], b"moved")
    write("http1", "redirect_relative", script(ord("0"), [relative], load))
    chunked = response(206, [(b"Content-Range", b"bytes 0-15/16"), (b"Transfer-Encoding", b"chunked")], b"10\r\n" + OBJECT + b"\r\n0\r\n\r\n")
    write("http1", "chunked_206", script(ord("0"), [chunked]))
    xml = b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message><RequestId>1</RequestId></Error>'
    write("http1", "s3_403", script(ord("0"), [response(403, [(b"Content-Type", b"application/xml"), (b"Content-Length", b"%d" % len(xml))], xml)]))
    busy = response(503, [(b"Retry-After", b"1"), (b"Content-Length", b"4")], b"busy")
    write("http1", "retry_503", script(ord("0"), [busy], load))
    cut = response(206, [(b"Content-Range", b"bytes 0-15/16"), (b"Content-Length", b"16")], OBJECT[:5])
    write("http1", "cut_body", script(ord("0"), [cut], load))
    write("http1", "etag_changes", script(ord("0"), [partial(0, 15), partial(8, 15, etag=b'"v2"')]))
    informational = b"HTTP/1.1 100 Continue\r\n\r\n" + partial(0, 15)
    write("http1", "informational_100", script(ord("0"), [informational] + load[1:]))
    write("http1", "side_by_side", script(ord("1"), [partial(0, 15), partial(8, 15), partial(0, 15)], [partial(0, 15)]))
    odd = b"HTTP/1.1 206 \r\nContent-Range: bytes 0-15/*\r\nContent-Length: 16\r\nContent-Length: 16\r\nX: \x01\r\n\r\n" + OBJECT
    write("http1", "odd_head", script(ord("0"), [odd]))
    write("http1", "huge_claims", script(ord("0"), [response(206, [(b"Content-Range", b"bytes 0-65535/18446744073709551615"), (b"Content-Length", b"65536")], OBJECT)]))


# ---- HTTP/2 ----
DATA, HEADERS, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = 0, 1, 3, 4, 5, 6, 7, 8, 9
END_STREAM, ACK, END_HEADERS, PADDED, PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def literal(index, value):
    """A literal header field with incremental indexing, name from the static table."""
    assert len(value) < 127
    return bytes([0x40 | index, len(value)]) + value


STATUS = {200: b"\x88", 206: b"\x8a", 404: b"\x8d"}


def status(code):
    return STATUS.get(code) or literal(8, b"%d" % code)


def h2_response(stream, first, last, etag=b'"v1"', total=16):
    body = OBJECT[first : last + 1]
    block = status(206) + literal(30, b"bytes %d-%d/%d" % (first, last, total)) + literal(28, b"%d" % len(body)) + literal(34, etag)
    return frame(HEADERS, END_HEADERS, stream, block) + frame(DATA, END_STREAM, stream, body)


def http2_seeds():
    settings = frame(SETTINGS, 0, 0, struct.pack(">HI", 3, 100) + struct.pack(">HI", 4, 1 << 20)) + frame(SETTINGS, ACK, 0)
    load = [settings + h2_response(1, 0, 15), h2_response(3, 8, 15), h2_response(5, 0, 15), h2_response(7, 0, 15)]
    write("http2", "range", script(ord("0"), load))
    write("http2", "side_by_side", script(ord("1"), [load[0], h2_response(3, 8, 15) + h2_response(5, 0, 15), h2_response(7, 0, 15)]))
    goaway = frame(GOAWAY, 0, 0, struct.pack(">II", 0, 0) + b"going away")
    write("http2", "goaway_then_load", script(ord("0"), [settings + goaway], load))
    rst = frame(RST_STREAM, 0, 1, struct.pack(">I", 2))
    write("http2", "reset_stream", script(ord("0"), [settings + rst], load))
    ignores = frame(HEADERS, END_HEADERS | END_STREAM, 1, status(200) + literal(28, b"16"))
    write("http2", "ignores_range_to_http1", script(ord("0"), [settings + ignores], [partial(0, 15), partial(8, 15), partial(0, 15), partial(0, 15)]))
    redirect = frame(HEADERS, END_HEADERS | END_STREAM, 1, status(302) + literal(46, b"http://mirror.example/m.bin"))
    write("http2", "redirect", script(ord("0"), [settings + redirect], load))
    early = frame(HEADERS, END_HEADERS, 1, status(103) + literal(45, b"</x>; rel=preload"))
    write("http2", "informational_103", script(ord("0"), [settings + early + h2_response(1, 0, 15)[:]] + load[1:]))
    block = status(206) + literal(30, b"bytes 0-15/16") + literal(34, b'"v1"')
    split = frame(HEADERS, PADDED | PRIORITY, 1, bytes([3]) + struct.pack(">IB", 0, 15) + block[:4] + b"\0\0\0")
    split += frame(CONTINUATION, END_HEADERS, 1, block[4:]) + frame(DATA, PADDED | END_STREAM, 1, bytes([2]) + OBJECT + b"\0\0")
    write("http2", "padded_continuation", script(ord("0"), [settings + split] + load[1:]))
    too_long = frame(HEADERS, END_HEADERS, 1, block) + b"".join(frame(DATA, 0, 1, OBJECT * 1000) for _ in range(5))
    write("http2", "longer_than_asked", script(ord("0"), [settings + too_long]))
    chatter = frame(PING, 0, 0, b"12345678") + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1 << 20)) + frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 1000))
    write("http2", "ping_window_update", script(ord("0"), [settings + chatter + h2_response(1, 0, 15)] + load[1:]))
    push = frame(PUSH_PROMISE, END_HEADERS, 1, struct.pack(">I", 2) + b"\x82\x87\x84" + literal(1, b"x"))
    write("http2", "push_promise", script(ord("0"), [settings + push + h2_response(1, 0, 15)]))
    write("http2", "not_http2", script(ord("0"), [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"]))
    write("http2", "two_connections", script(ord("2"), load[:1] + [h2_response(3, 8, 15)], [settings + h2_response(1, 0, 15)]))


# ---- S3 configuration and XML answers ----
FILE = b"\n~~file~~\n"


def s3_seeds():
    credentials = b"[default]\naws_access_key_id = AKIDEXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n\n[dev]\naws_access_key_id=AKIDDEV\naws_secret_access_key=devsecret\naws_session_token=FwoGZXIvYXdzEXAMPLE\n"
    config = b"[default]\nregion = us-west-2\n\n[profile dev]\nregion = eu-central-1\ns3 =\n    addressing_style = path\n    endpoint_url = http://ignored\n; a comment\n# another\n"
    s3cfg = b"[default]\naccess_key = S3CMDKEY\nsecret_key = s3cmdsecret\nhost_base = minio.local:9000\nhost_bucket = minio.local:9000\nuse_https = False\n"
    error = b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>dir/key</Key></Error>'
    write("s3_config", "aws_default", b"0" + FILE.join([credentials, config, s3cfg, b"", error]))
    write("s3_config", "aws_profile_dev", b"8" + FILE.join([credentials, config, s3cfg, b"AWS_PROFILE=dev\nuri=s3://models.v2/gpt2/model.tensors", error]))
    write("s3_config", "s3cmd_only", b"0" + FILE.join([b"", b"", s3cfg, b"uri=s3://bucket/a b/c%2Fd", b"<Error><Code><![CDATA[SlowDown]]></Code></Error>"]))
    env = b"AWS_ACCESS_KEY_ID=AKIDENV\nAWS_SECRET_ACCESS_KEY=envsecret\nAWS_SESSION_TOKEN=token\nAWS_REGION=ap-south-1\nAWS_ENDPOINT_URL_S3=https://s3.example.com:8443/base/\n"
    write("s3_config", "environment", b"4" + FILE.join([b"", b"", b"", env, b"<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>VXBsb2FkIElE&amp;x</UploadId></InitiateMultipartUploadResult>"]))
    options = b"s3.endpoint=http://[::1]:9000\ns3.access_key_id=AK\ns3.secret_access_key=SK\ns3.region=local\nuri=s3://Bucket_Name/key"
    listing = b"<ListMultipartUploadsResult><Upload><Key>key</Key><UploadId>id-1</UploadId><Initiated>2026-11-28T03:00:00.000Z</Initiated></Upload><Upload><Key>key</Key><UploadId>id-2</UploadId></Upload><Upload><Key>cut</Key>"
    write("s3_config", "options_listing", b"2" + FILE.join([b"", b"", b"", options, listing]))
    write("s3_config", "missing_profile", b"0" + FILE.join([credentials, config, b"", b"AWS_PROFILE=nope\nAWS_DEFAULT_REGION=x", b"</UploadId><UploadId>"]))
    hostile = b"[\n]\n[]\n=\n:\n[default\nkey\n  indented = 1\n\t[tab]\n[default]\naws_access_key_id=\naws_secret_access_key=only-secret\n\r\n[ spaced ]\r\nregion=\r\n"
    write("s3_config", "hostile_ini", b"1" + FILE.join([hostile, hostile, hostile, b"HOME=\ns3.profile=default\nAWS_ENDPOINT_URL=ftp://x", b"<Error><Code></Code><Message></Message></Error>"]))


if __name__ == "__main__":
    resp_seeds()
    http1_seeds()
    http2_seeds()
    s3_seeds()
