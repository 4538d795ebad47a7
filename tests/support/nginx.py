"""tests/support/nginx.py: a real nginx on 127.0.0.1 for the network tests, in its own prefix.

    with Nginx(root_dir) as server:
        url = server.http_url + "/tensorizer/basic_v1.tensors"   # HTTP/1.1, cleartext
        h2c = server.h2c_url + "/tensorizer/basic_v1.tensors"    # HTTP/2 cleartext, prior knowledge
        tls = server.https_url + "/tensorizer/basic_v1.tensors"  # TLS, h2 or HTTP/1.1 by ALPN; trust server.tls_cert
        hop = server.redirect_url + "/tensorizer/basic_v1.tensors"  # 307 to http_url

Also /moved/X (302 to /X), /relative/X (301, relative Location) and /loop (redirects forever).

Runs unprivileged (`nginx -p PREFIX -c nginx.conf`, the recipe in the project's testbed notes),
on free ports, and is stopped (and its prefix removed) on exit. Raises RuntimeError with the
reason when nginx is not installed, so that callers can exit 77 (skipped).
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

from processes import free_port  # noqa: F401 (tests import it from here too)

CONFIG = """
worker_processes 1;
daemon on;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    {access_log}
    client_body_temp_path {prefix}/client_temp;
    proxy_temp_path {prefix}/proxy_temp;
    fastcgi_temp_path {prefix}/fastcgi_temp;
    uwsgi_temp_path {prefix}/uwsgi_temp;
    scgi_temp_path {prefix}/scgi_temp;
    default_type application/octet-stream;
    sendfile on;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{http_port};
        root {root};
        {limit_rate}
        # Redirects, as presigned URLs and CDNs send them: 302 with an absolute Location,
        # 301 with a relative one, and one that never ends.
        location /moved/ {{ rewrite ^/moved/(.*)$ /$1 redirect; }}
        location /relative/ {{ absolute_redirect off; rewrite ^/relative/(.*)$ /$1 permanent; }}
        location = /loop {{ return 302 /loop; }}
    }}
    # TLS (HTTP/1.1 or h2 by ALPN) with a self-signed certificate for 127.0.0.1 (tls_cert).
    server {{
        listen 127.0.0.1:{https_port} ssl http2;
        {http2_chunk}
        ssl_certificate {prefix}/cert.pem;
        ssl_certificate_key {prefix}/key.pem;
        output_buffers 2 1m;
        root {root};
    }}
    # HTTP/2 cleartext with prior knowledge (h2c): nginx 1.22 serves only HTTP/2 on such a port.
    server {{
        listen 127.0.0.1:{h2c_port} http2;
        {http2_chunk}
        root {root};
        location /moved/ {{ rewrite ^/moved/(.*)$ /$1 redirect; }}
    }}
    # h2c again, but each connection is told to go away (GOAWAY) after 3 requests.
    server {{
        listen 127.0.0.1:{h2c_goaway_port} http2;
        keepalive_requests 3;
        root {root};
    }}
    # Another host: every request is sent on (307) to the first one.
    server {{
        listen 127.0.0.1:{redirect_port};
        location / {{ return 307 http://127.0.0.1:{http_port}$request_uri; }}
    }}
}}
"""


class Nginx:
    # http2_chunk_size: nginx's largest DATA frame (its default, 8k, makes nginx's frame work
    # the bottleneck of a large download); None keeps the default.
    # access_log: log each request's URI, Range header and status (requests() reads them back).
    # limit_rate: bytes a second per connection on http_url (a network's rate: 8 connections at
    # 62500000 are 4 Gbit/s); None: as fast as it goes.
    def __init__(self, root, http2_chunk_size=None, access_log=False, limit_rate=None):
        self.http2_chunk = f"http2_chunk_size {http2_chunk_size};" if http2_chunk_size else ""
        self.limit_rate = f"limit_rate {limit_rate};" if limit_rate else ""
        self.access_log = access_log
        self.binary = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
        if self.binary is None:
            raise RuntimeError("nginx is not installed (scripts/setup.sh installs it)")
        self.root = os.path.realpath(root)
        self.prefix = tempfile.mkdtemp(prefix="ringload-nginx-")
        self.tls_cert = os.path.join(self.prefix, "cert.pem")  # self-signed: also the CA to trust
        self._choose_ports()

    def _choose_ports(self):
        self.http_port = free_port()
        self.http_url = f"http://127.0.0.1:{self.http_port}"
        self.redirect_port = free_port()
        self.redirect_url = f"http://127.0.0.1:{self.redirect_port}"  # 307s every request to http_url
        self.h2c_port = free_port()
        self.h2c_url = f"http://127.0.0.1:{self.h2c_port}"  # HTTP/2 only (prior knowledge)
        self.h2c_goaway_port = free_port()
        self.h2c_goaway_url = f"http://127.0.0.1:{self.h2c_goaway_port}"  # h2c, GOAWAY after 3 requests
        self.https_port = free_port()
        self.https_url = f"https://127.0.0.1:{self.https_port}"

    def __enter__(self):
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                        "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout",
                        os.path.join(self.prefix, "key.pem"), "-out", self.tls_cert],
                       check=True, capture_output=True, timeout=60)
        # A port free when chosen may be someone's by the time nginx binds it (the tests run side
        # by side): then choose five others, a few times, before calling it a failure.
        for attempt in range(4):
            started = self._start()
            if started.returncode == 0:
                break
            said = started.stderr.decode(errors="replace")
            if "Address already in use" not in said or attempt == 3:
                raise RuntimeError(f"nginx did not start (exit {started.returncode}): {said}")
            self._choose_ports()
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.http_port), timeout=1).close()
                return self
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start: " + open(os.path.join(self.prefix, "error.log")).read())
                time.sleep(0.05)

    def _start(self):
        config = os.path.join(self.prefix, "nginx.conf")
        with open(config, "w") as f:
            f.write(CONFIG.format(prefix=self.prefix, root=self.root, http_port=self.http_port,
                                  redirect_port=self.redirect_port, https_port=self.https_port,
                                  h2c_port=self.h2c_port, h2c_goaway_port=self.h2c_goaway_port,
                                  http2_chunk=self.http2_chunk, access_log=self._access_log_config(),
                                  limit_rate=self.limit_rate))
        return subprocess.run([self.binary, "-p", self.prefix + "/", "-c", config, "-e",
                               os.path.join(self.prefix, "error.log")], capture_output=True, timeout=30)

    def _access_log_config(self):
        if not self.access_log:
            return "access_log off;"
        return (f'log_format ranges "$request_uri|$http_range|$status"; '
                f"access_log {self.prefix}/access.log ranges;")

    def requests(self):
        """(uri, range header, status) of every request so far, in order (access_log=True)."""
        path = os.path.join(self.prefix, "access.log")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return [tuple(line.rstrip("\n").split("|")) for line in f if line.strip()]

    def __exit__(self, *exc):
        pid_file = os.path.join(self.prefix, "nginx.pid")
        try:
            with open(pid_file) as f:
                pid = int(f.read())
            os.kill(pid, 15)
            deadline = time.monotonic() + 10
            while os.path.exists(pid_file) and time.monotonic() < deadline:
                time.sleep(0.05)
        except (OSError, ValueError):
            pass
        shutil.rmtree(self.prefix, ignore_errors=True)
