#!/usr/bin/env python3
"""tests/bindings/http_test.py RINGLOAD DATA_DIR

`ringload` over http:// against a real nginx started here on 127.0.0.1 (tests/support/nginx.py):
every tensorizer fixture loads over HTTP/1.1 range reads with its manifest's names, dtypes,
shapes and sha256 (hashes verified, keys given for the encrypted ones), with 8 connections and
with 1; `info` works over http; redirects are followed (302, relative 301, 307 to another host)
and a redirect loop is refused; every fixture loads over https (TLS, nginx's self-signed
certificate trusted with --ca-file; HTTP/2 chosen by ALPN, HTTP/1.1 when asked), which fails
without it and works with --insecure; every fixture loads over h2c (HTTP/2 cleartext, prior
knowledge) with several connections and streams; a missing object and a closed port fail with
one clear line naming the URL, and so does h2c spoken to an HTTP/1.1-only port. An https server
whose ALPN offers http/1.1 only (Python's, here) is read over HTTP/1.1 when the version is
automatic and refused clearly with --http-version 2; --ca-file takes a c_rehash directory. Exits 77
(skipped, with the reason) where nginx is not installed.
"""
import http.server
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from fixture_keys import key_args  # noqa: E402
from nginx import Nginx, free_port  # noqa: E402

RINGLOAD, DATA = sys.argv[1:3]
checks = Checks()
check = checks.check


def run(*args):
    return subprocess.run([RINGLOAD, *args], capture_output=True, text=True, timeout=300)


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """GET with one 'bytes=A-B' range over keep-alive HTTP/1.1: what the HTTP/1.1 source needs."""
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            self.send_error(404)
            return
        size = os.path.getsize(path)
        match = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
        first, last = (int(match[1]), min(int(match[2]), size - 1)) if match else (0, size - 1)
        self.send_response(206 if match else 200)
        if match:
            self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(last - first + 1))
        self.send_header("ETag", '"fixed"')
        self.end_headers()
        with open(path, "rb") as f:
            f.seek(first)
            self.wfile.write(f.read(last - first + 1))

    def log_message(self, *args):
        pass


def https_http1_only(root, cert, key):
    """An https server on 127.0.0.1 whose ALPN offers http/1.1 alone; returns it serving."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["http/1.1"])
    handler = lambda *a, **k: RangeHandler(*a, directory=root, **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


try:
    server = Nginx(DATA)
except RuntimeError as error:
    print(f"SKIP: {error}")
    sys.exit(77)

index = json.load(open(os.path.join(DATA, "tensorizer", "index.json")))
with server, tempfile.TemporaryDirectory() as secrets:
    for entry in index["files"]:
        manifest = json.load(open(os.path.join(DATA, "tensorizer", entry["manifest"])))
        url = f"{server.http_url}/tensorizer/{entry['file']}"
        keys = key_args(manifest, secrets)
        want = [(t["path"], t["dtype"].removeprefix("torch."), t["shape"], t["sha256"]) for t in manifest["tensors"]]
        for connections in ("8", "1"):
            label = f"http {entry['file']} --connections {connections}"
            out = run("load", url, "--json", "--sha256", "--verify", "--connections", connections, *keys)
            check(label + " exit", out.returncode == 0, out.stderr)
            got = json.loads(out.stdout)["tensors"] if out.returncode == 0 else []
            check(label + " values", [(g["path"], g["dtype"], g["shape"], g["sha256"]) for g in got] == want)
        info = run("info", url, "--json")
        check(f"http info {entry['file']}", info.returncode == 0 and
              json.loads(info.stdout)["data_version"] == manifest["data_version"], info.stderr)

    # HTTP/2 cleartext (h2c, prior knowledge): several connections, several streams on each.
    for entry in index["files"]:
        manifest = json.load(open(os.path.join(DATA, "tensorizer", entry["manifest"])))
        want = [(t["path"], t["dtype"].removeprefix("torch."), t["shape"], t["sha256"]) for t in manifest["tensors"]]
        url = f"{server.h2c_url}/tensorizer/{entry['file']}"
        for connections, streams in (("4", "4"), ("1", "1")):
            label = f"h2c {entry['file']} --connections {connections} --streams {streams}"
            out = run("load", url, "--json", "--sha256", "--verify", "--http-version", "2", "--connections",
                      connections, "--streams", streams, "--range-size", "65536", *key_args(manifest, secrets))
            check(label + " exit", out.returncode == 0, out.stderr)
            got = json.loads(out.stdout) if out.returncode == 0 else {"tensors": [], "how": ""}
            check(label + " values", [(g["path"], g["dtype"], g["shape"], g["sha256"]) for g in got["tensors"]] == want)
            check(label + " over h2c", got["how"].startswith("HTTP/2 cleartext"), got["how"])
    large_want = [t["sha256"] for t in json.load(open(os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors.json")))["tensors"]]
    out = run("load", f"{server.h2c_goaway_url}/tensorizer/large_mixed_v2.tensors", "--json", "--sha256", "--verify",
              "--http-version", "2", "--connections", "2", "--streams", "4", "--range-size", "65536", "--timeout", "5")
    got = [t["sha256"] for t in json.loads(out.stdout)["tensors"]] if out.returncode == 0 else []
    check("h2c with a GOAWAY every 3 requests: loads, the manifest's values", got == large_want, out.stderr)
    missing_h2 = f"{server.h2c_url}/tensorizer/missing.tensors"
    out = run("load", missing_h2, "--http-version", "2")
    check("h2c missing object: not found", out.returncode != 0 and "not found" in out.stderr and
          missing_h2 in out.stderr and out.stderr.count("\n") == 1, out.stderr)
    out = run("load", f"{server.h2c_url}/moved/tensorizer/large_mixed_v2.tensors", "--http-version", "2", "--verify")
    check("h2c redirect followed", out.returncode == 0, out.stderr)
    plain = f"{server.http_url}/tensorizer/large_mixed_v2.tensors"
    out = run("load", plain, "--http-version", "2", "--attempts", "2")
    check("h2c to an HTTP/1.1-only server: a clear error", out.returncode != 0 and plain in out.stderr and
          "HTTP/2" in out.stderr and out.stderr.count("\n") == 1, out.stderr)

    # Redirects: followed (302 absolute, 301 relative, 307 to another host), loops refused.
    large = json.load(open(os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors.json")))
    for url in (f"{server.http_url}/moved/tensorizer/large_mixed_v2.tensors",
                f"{server.http_url}/relative/tensorizer/large_mixed_v2.tensors",
                f"{server.redirect_url}/tensorizer/large_mixed_v2.tensors"):
        out = run("load", url, "--json", "--sha256", "--verify")
        check(f"redirect {url} exit", out.returncode == 0, out.stderr)
        got = [t["sha256"] for t in json.loads(out.stdout)["tensors"]] if out.returncode == 0 else []
        check(f"redirect {url} values", got == [t["sha256"] for t in large["tensors"]])
    out = run("load", f"{server.http_url}/loop")
    check("redirect loop refused", out.returncode != 0 and "more than 5 redirects" in out.stderr, out.stderr)

    # https: trusted through --ca-file, refused without it, accepted with --insecure.
    for entry in index["files"]:
        manifest = json.load(open(os.path.join(DATA, "tensorizer", entry["manifest"])))
        want = [(t["path"], t["dtype"].removeprefix("torch."), t["shape"], t["sha256"]) for t in manifest["tensors"]]
        url = f"{server.https_url}/tensorizer/{entry['file']}"
        out = run("load", url, "--json", "--sha256", "--verify", "--ca-file", server.tls_cert,
                  *key_args(manifest, secrets))
        check(f"https {entry['file']} exit", out.returncode == 0, out.stderr)
        got = json.loads(out.stdout)["tensors"] if out.returncode == 0 else []
        check(f"https {entry['file']} values", [(g["path"], g["dtype"], g["shape"], g["sha256"]) for g in got] == want)
    tls_url = f"{server.https_url}/tensorizer/large_mixed_v2.tensors"
    for version, how in (("", "HTTP/2 over TLS"), ("2", "HTTP/2 over TLS"), ("1.1", "HTTP/1.1")):
        args = ["--http-version", version] if version else []
        out = run("load", tls_url, "--json", "--verify", "--ca-file", server.tls_cert, *args)
        got = json.loads(out.stdout)["how"] if out.returncode == 0 else ""
        check(f"https --http-version {version or 'automatic'}: {how}", got.startswith(how), out.stderr + got)
    # When the tensors' memory is faulted in (--prefault): ahead in the background for files;
    # on touch for network sources (they receive straight into it), unless this machine is a VM
    # with free page reporting (a virtio-balloon offering feature bit 5), read here from sysfs.
    def balloon_reports_free_pages(root="/sys/bus/virtio/devices"):
        for name in os.listdir(root) if os.path.isdir(root) else []:
            try:
                device = open(os.path.join(root, name, "device")).read().strip()
                features = open(os.path.join(root, name, "features")).read().strip()
            except OSError:
                continue
            if device == "0x0005" and len(features) > 5 and features[5] == "1":
                return True
        return False

    plain_url = f"{server.http_url}/tensorizer/large_mixed_v2.tensors"
    automatic = "memory faulted in ahead (the VM's host" if balloon_reports_free_pages() else "memory faulted in on touch"
    for where, args, want_how in (
            ("file", [os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors")], "memory faulted in ahead"),
            ("http", [plain_url], automatic),
            ("http --prefault on-touch", [plain_url, "--prefault", "on-touch"], "memory faulted in on touch"),
            ("http --prefault background", [plain_url, "--prefault", "background"], "memory faulted in ahead"),
            ("h2c --prefault false", [server.h2c_url + "/tensorizer/large_mixed_v2.tensors", "--http-version", "2",
                                      "--prefault", "false"], "memory faulted in on touch")):
        out = run("load", *args, "--json", "--sha256")
        got = json.loads(out.stdout) if out.returncode == 0 else {"how": "", "tensors": []}
        check(f"{where}: {want_how}", want_how in got["how"], out.stderr + got["how"])
        check(f"{where}: the manifest's values", [t["sha256"] for t in got["tensors"]] == large_want, out.stderr)
    out = run("info", tls_url, "--ca-file", server.tls_cert, "--json")
    check("https info --ca-file", out.returncode == 0 and json.loads(out.stdout)["data_version"] == 2, out.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "copy.tensors")
        out = run("convert", tls_url, copy, "--ca-file", server.tls_cert)
        check("convert from https", out.returncode == 0 and open(copy, "rb").read() ==
              open(os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors"), "rb").read(), out.stderr)
    out = run("load", tls_url)
    check("https untrusted certificate refused", out.returncode != 0 and "certificate verify failed" in out.stderr and
          tls_url in out.stderr and out.stderr.count("\n") == 1, out.stderr)
    out = run("load", tls_url, "--insecure", "--verify")
    check("https --insecure", out.returncode == 0, out.stderr)
    out = run("load", tls_url, "--ca-file", "/nonexistent.pem")
    check("https bad --ca-file", out.returncode != 0 and "/nonexistent.pem" in out.stderr, out.stderr)
    with tempfile.TemporaryDirectory() as ca_dir:  # --ca-file DIR: hashed names, as c_rehash makes
        subject_hash = subprocess.run(["openssl", "x509", "-hash", "-noout", "-in", server.tls_cert],
                                      capture_output=True, text=True, check=True).stdout.strip()
        shutil.copy(server.tls_cert, os.path.join(ca_dir, subject_hash + ".0"))
        out = run("load", tls_url, "--verify", "--ca-file", ca_dir)
        check("https --ca-file DIR", out.returncode == 0, out.stderr)

    # A server whose ALPN offers http/1.1 alone: automatic falls back to HTTP/1.1; asking for 2 fails.
    http1_only = https_http1_only(DATA, server.tls_cert, os.path.join(server.prefix, "key.pem"))
    try:
        only_url = f"https://127.0.0.1:{http1_only.server_address[1]}/tensorizer/large_mixed_v2.tensors"
        out = run("load", only_url, "--json", "--sha256", "--verify", "--ca-file", server.tls_cert)
        got = json.loads(out.stdout) if out.returncode == 0 else {"how": "", "tensors": []}
        check("https, ALPN http/1.1 only: automatic reads over HTTP/1.1", got["how"].startswith("HTTP/1.1"),
              out.stderr + got["how"])
        check("https, ALPN http/1.1 only: the manifest's values",
              [t["sha256"] for t in got["tensors"]] == large_want, out.stderr)
        out = run("load", only_url, "--http-version", "2", "--ca-file", server.tls_cert)
        check("https, ALPN http/1.1 only: --http-version 2 refused", out.returncode != 0 and
              "does not speak HTTP/2" in out.stderr and out.stderr.count("\n") == 1, out.stderr)
    finally:
        http1_only.shutdown()

    missing = f"{server.http_url}/tensorizer/missing.tensors"
    closed = f"http://127.0.0.1:{free_port()}/x.tensors"
    for args, needles in [(["load", missing], ["not found", missing, "404"]),
                          (["load", closed], ["cannot connect", closed]),
                          (["load", "http://"], ["no host"]),
                          (["load", missing, "--range-size", "1000"], ["multiple of 4096", missing])]:
        out = run(*args)
        check(f"error {args}", out.returncode != 0 and all(n in out.stderr for n in needles) and
              out.stderr.count("\n") == 1, out.stderr)

    out = run("load", missing, "--http-version", "3")
    check("--http-version 3 refused", out.returncode != 0 and "--http-version" in out.stderr, out.stderr)

sys.exit(checks.finish())
