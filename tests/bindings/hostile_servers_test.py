#!/usr/bin/env python3
"""tests/bindings/hostile_servers_test.py RINGLOAD DATA_DIR: servers that would make memory or time grow (issue #27, part 2).

A server on 127.0.0.1 (ours, below: raw bytes on a socket, no library to tidy them up) answers
every request with something no honest server sends: HTTP/1.1 heads that never end or a header
line without an end, an endless chunked body, a chunk of 2^62 bytes, a Content-Length or a
Content-Range of 2^62, an endless error body, redirects forever, a slow-loris trickle; HTTP/2
(h2c) header blocks continued forever; Redis bulk strings and arrays of 2^62, a line without an
end; an S3 error whose XML never ends. `ringload info` and `ringload load` of each must end with
exit status 1 and one clear line naming the URL, within 30 s, under 512 MiB of peak memory: the
client refuses before memory or time grows with the claim. TLS servers that answer in plain
text or close after the ClientHello are refused the same way. And two faults with an honest
server: a burst of 429s is waited out (the load is whole), and an object replaced mid-load
(other bytes, another ETag) is refused as changed, never loaded as a mix. Standard library only.
"""
import json
import os
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from refusals import refuses  # noqa: E402

RINGLOAD, DATA = sys.argv[1:3]
checks = Checks()
check = checks.check
SEND_FOR_SECONDS = 60  # a hostile behaviour stops sending after this: the client must be gone long before


class Hostile(socketserver.ThreadingTCPServer):
    """Answers every connection with `behaviour(connection)`; counts connections."""
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self):
        self.behaviour = None
        self.connections = 0
        super().__init__(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def port(self):
        return self.server_address[1]


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        self.server.connections += 1
        self.request.settimeout(5)
        try:
            self.server.behaviour(self.request)
        except OSError:
            pass  # the client gave up: what we want


def read_request(connection):
    """Reads one HTTP/1.1 request head (the client's requests have no bodies here)."""
    data = b""
    while b"\r\n\r\n" not in data:
        more = connection.recv(65536)
        if not more:
            raise ConnectionError("client closed")
        data += more
    return data


def send_forever(connection, head, piece):
    connection.sendall(head)
    ends = time.monotonic() + SEND_FOR_SECONDS
    while time.monotonic() < ends:
        connection.sendall(piece)


def http_behaviour(head, piece=b""):
    def behaviour(connection):
        read_request(connection)
        if piece:
            send_forever(connection, head, piece)
        else:
            connection.sendall(head)
            time.sleep(SEND_FOR_SECONDS)
    return behaviour


def slow_loris(connection):
    read_request(connection)
    for byte in b"HTTP/1.1 206 Partial Content\r\nX-Slow: " + b"a" * 10_000:
        connection.sendall(bytes([byte]))
        time.sleep(0.2)


def redirect_to_self(server):
    def behaviour(connection):
        while True:
            read_request(connection)
            connection.sendall(f"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{server.port}/again\r\n"
                               "Content-Length: 0\r\n\r\n".encode())
    return behaviour


def h2_frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def h2_literal(name, value):  # HPACK literal header field without indexing, new name (lengths < 127)
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def h2_continuation_flood(connection):
    """A server preface, then HEADERS on stream 1 without END_HEADERS and CONTINUATION frames forever."""
    data = b""
    while len(data) < 24:
        more = connection.recv(65536)
        if not more:
            return
        data += more
    connection.sendall(h2_frame(4, 0, 0, b"") + h2_frame(4, 1, 0, b""))  # SETTINGS, ack of theirs
    block = h2_literal(b":status", b"206") + h2_literal(b"x-flood", b"v" * 100) * 100
    connection.sendall(h2_frame(1, 0, 1, block))  # HEADERS, no END_HEADERS
    continuation = h2_frame(9, 0, 1, h2_literal(b"x-flood", b"v" * 100) * 150)
    send_forever(connection, b"", continuation * 16)


def resp_behaviour(reply, piece=b""):
    def behaviour(connection):
        connection.recv(65536)
        if piece:
            send_forever(connection, reply, piece)
        else:
            connection.sendall(reply)
            time.sleep(SEND_FOR_SECONDS)
    return behaviour


def redis_trickle(connection):
    connection.recv(65536)
    for byte in b"*2\r\n$1\r\n0\r\n*1\r\n$" + b"9" * 10_000:
        connection.sendall(bytes([byte]))
        time.sleep(0.2)


class RangeServing:
    """Serves `data` honestly to range requests (HTTP/1.1, keep-alive), except that the first
    `busy` requests are answered 429 Too Many Requests, and that from request `change_at` on
    the object is another one: other bytes under another ETag (replaced while loading)."""

    def __init__(self, data, busy=0, change_at=None, interim=b""):
        self.data, self.busy, self.change_at, self.requests = data, busy, change_at, 0
        self.interim = interim  # informational 1xx responses sent before each final one

    def __call__(self, connection):
        while True:
            head = read_request(connection).decode("latin-1")
            self.requests += 1
            connection.sendall(self.interim)
            if self.requests <= self.busy:
                connection.sendall(b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 0\r\n\r\n")
                continue
            changed = self.change_at is not None and self.requests >= self.change_at
            data = self.data[::-1] if changed else self.data
            first, _, last = head.lower().split("range: bytes=")[1].split("\r\n")[0].partition("-")
            first, last = int(first), min(int(last), len(data) - 1)
            connection.sendall(f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes {first}-{last}/{len(data)}\r\n"
                               f"ETag: \"{'v2' if changed else 'v1'}\"\r\nContent-Length: {last - first + 1}\r\n\r\n"
                               .encode() + data[first:last + 1])


def tls_then_plain_text(connection):
    """An https:// server that answers the TLS ClientHello in plain HTTP."""
    connection.recv(65536)
    connection.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


def tls_cut_after_hello(connection):
    connection.recv(65536)


def refused(server, label, url, *extra, commands=None):
    """Each of `commands` (argument lists: `info URL` and `load URL` unless given) must end
    with exit status 1 and one line naming the server, within 30 s, in bounded memory."""
    for arguments in commands or (["info", url], ["load", url]):
        said = refuses(check, f"{label}: {arguments[0]}",
                       [RINGLOAD, *arguments, "--timeout", "2", "--attempts", "2", *extra],
                       f"127.0.0.1:{server.port}", seconds=30)
        print(f"  {label}: {arguments[0]}: {server.connections} connections, {said}")
        server.connections = 0


HUGE = 1 << 62
server = Hostile()
http = f"http://127.0.0.1:{server.port}/model.safetensors"
cases = [
    ("HTTP/1.1: headers that never end",
     http_behaviour(b"HTTP/1.1 206 Partial Content\r\n", b"X-Endless: " + b"a" * 100 + b"\r\n"), []),
    ("HTTP/1.1: a header line without an end",
     http_behaviour(b"HTTP/1.1 206 Partial Content\r\nX-Endless: ", b"a" * 65536), []),
    ("HTTP/1.1: a status line without an end", http_behaviour(b"HTTP/1.1 206 ", b"a" * 65536), []),
    ("HTTP/1.1: an endless chunked body",
     http_behaviour(b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-1023/4096\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n", b"4000\r\n" + b"\0" * 0x4000 + b"\r\n"), []),
    ("HTTP/1.1: a chunk of 2^62 bytes",
     http_behaviour(b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-1023/4096\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n4000000000000000\r\n", b"\0" * 65536), []),
    ("HTTP/1.1: chunk extensions that never end",
     http_behaviour(b"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-1023/4096\r\n"
                    b"Transfer-Encoding: chunked\r\n\r\n10;", b"x" * 65536), []),
    ("HTTP/1.1: a Content-Length of 2^62 ignoring Range",
     http_behaviour(f"HTTP/1.1 200 OK\r\nContent-Length: {HUGE}\r\n\r\n".encode(), b"\0" * 65536), []),
    ("HTTP/1.1: a Content-Range claiming 2^62 bytes",
     http_behaviour(f"HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-{HUGE - 1}/{HUGE}\r\n"
                    f"Content-Length: {HUGE}\r\n\r\n".encode(), b"\0" * 65536), []),
    ("HTTP/1.1: an endless error body",
     http_behaviour(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\r\n", b"denied " * 9000), []),
    ("HTTP/1.1: an endless chunked error body",
     http_behaviour(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n",
                    b"4000\r\n" + b"n" * 0x4000 + b"\r\n"), []),
    ("HTTP/1.1: a slow-loris head (a byte every 0.2 s)", slow_loris, []),
    ("HTTP/1.1: redirects forever", redirect_to_self(server), []),
    ("HTTP/1.1: 100 Continue forever", http_behaviour(b"", b"HTTP/1.1 100 Continue\r\n\r\n"), []),
    ("HTTP/2: CONTINUATION frames forever", h2_continuation_flood, ["--http-version", "2"]),
    ("S3: an error whose XML never ends",
     http_behaviour(b"HTTP/1.1 403 Forbidden\r\nContent-Type: application/xml\r\n\r\n"
                    b"<?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>",
                    b"no " * 20000), ["--s3-endpoint", f"http://127.0.0.1:{server.port}"]),
    ("S3: 100 Continue forever", http_behaviour(b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
     ["--s3-endpoint", f"http://127.0.0.1:{server.port}"]),
]
redis = f"redis://127.0.0.1:{server.port}/model"
redis_cases = [
    ("Redis: a bulk string of 2^62 bytes", resp_behaviour(f"${HUGE}\r\n".encode(), b"\0" * 65536)),
    ("Redis: an array of 2^62 elements", resp_behaviour(f"*{HUGE}\r\n".encode(), b":1\r\n" * 16384)),
    ("Redis: an array of 2^30 small elements, sent forever",
     resp_behaviour(f"*{1 << 30}\r\n".encode(), b":1\r\n" * 16384)),
    ("Redis: a trickled reply (a byte every 0.2 s)", redis_trickle),
    ("Redis: nested arrays forever", resp_behaviour(b"", b"*1\r\n" * 16384)),
    ("Redis: a line that never ends", resp_behaviour(b"+", b"a" * 65536)),
    ("Redis: an error line that never ends", resp_behaviour(b"-ERR ", b"a" * 65536)),
]
cases += [
    ("TLS: a server answering in plain text", tls_then_plain_text, []),
    ("TLS: a server that closes after the ClientHello", tls_cut_after_hello, []),
]
with server:
    for label, behaviour, extra in cases:
        server.behaviour = behaviour
        url = ("s3://bucket/model.safetensors" if label.startswith("S3") else
               http.replace("http://", "https://") if label.startswith("TLS") else http)
        refused(server, label, url, *extra)
    # A publish (ringload's blocking Redis client, not the loader's) meets the same replies.
    published = os.path.join(DATA, "tensorizer", "basic_v1.tensors")
    for label, behaviour in redis_cases:
        server.behaviour = behaviour
        refused(server, label, redis, commands=(["info", redis], ["load", redis], ["convert", published, redis]))

    # Faults a load survives or refuses with the truth: 429 bursts are waited out; an object
    # replaced mid-load (another ETag) is an error, never a mix of two objects.
    fixture = os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors")
    data = open(fixture, "rb").read()
    want = sorted(t["sha256"] for t in json.load(open(fixture + ".json"))["tensors"])
    url = f"http://127.0.0.1:{server.port}/large_mixed_v2.tensors"
    small_ranges = ["--range-size", str(1 << 20), "--connections", "2", "--timeout", "5"]
    server.behaviour = RangeServing(data, busy=3)
    out = subprocess.run([RINGLOAD, "load", url, "--verify", "--sha256", "--json", "--attempts", "5", *small_ranges],
                         capture_output=True, text=True, timeout=120)
    got = sorted(t["sha256"] for t in json.loads(out.stdout)["tensors"]) if out.returncode == 0 else None
    check("a burst of three 429s is waited out: the load is whole", got == want, out.stderr[-300:])
    # Informational 1xx responses before every final one (as a proxy or a CDN may send) are
    # passed over, over HTTP/1.1 and S3 alike: the load is whole.
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>; rel=preload\r\n\r\n"
    for label, target, extra in (("HTTP/1.1", url, []), ("S3", "s3://bucket/large_mixed_v2.tensors",
                                                         ["--s3-endpoint", f"http://127.0.0.1:{server.port}"])):
        server.behaviour = RangeServing(data, interim=interim)
        out = subprocess.run([RINGLOAD, "load", target, "--verify", "--sha256", "--json", *small_ranges, *extra],
                             capture_output=True, text=True, timeout=120)
        got = sorted(t["sha256"] for t in json.loads(out.stdout)["tensors"]) if out.returncode == 0 else None
        check(f"{label}: 100 Continue and 103 Early Hints before each response are passed over: the load is whole",
              got == want, out.stderr[-300:])
    server.behaviour = RangeServing(data, busy=1000)
    out = subprocess.run([RINGLOAD, "load", url, "--attempts", "3", *small_ranges], capture_output=True, text=True,
                         timeout=120)
    check("429s without end: refused naming the status", out.returncode == 1 and "429" in out.stderr,
          out.stderr[-300:])
    for change_at in (2, 5):
        server.behaviour = RangeServing(data, change_at=change_at)
        out = subprocess.run([RINGLOAD, "load", url, "--verify", *small_ranges], capture_output=True, text=True,
                             timeout=120)
        check(f"an object replaced at request {change_at}: refused as changed",
              out.returncode == 1 and "changed while loading" in out.stderr, out.stderr[-300:])
        print(f"  replaced at request {change_at}: {out.stderr.strip()}")
    server.shutdown()

sys.exit(checks.finish())
