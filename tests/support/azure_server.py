"""tests/support/azure_server.py: an Azure Blob Storage stand-in on 127.0.0.1 that checks every
request's authorisation with azure-storage-blob's own code before it serves a byte.

    with AzureServer("ringloadtest", key_base64, tls=True) as azure:
        azure.create_container("models")                       # private; public=True: anonymous reads
        azure.put("models", "dir/model.tensors", local_path)
        env["AZURE_STORAGE_CONNECTION_STRING"] = azure.connection_string(key=azure.key)
        ... ringload load az://ringloadtest/models/dir/model.tensors --ca-file azure.tls_cert ...
        sas = azure.container_sas("models")                    # made by the SDK's generate_container_sas

Blobs are served path-style, as Azurite serves them: ENDPOINT/CONTAINER/BLOB with ENDPOINT =
http(s)://127.0.0.1:PORT/ACCOUNT. GET and HEAD, whole or ranged (Range or x-ms-range, x-ms-range
first: 206 with Content-Range; 416 InvalidRange past the end), with the headers Azure sends (ETag,
Last-Modified, x-ms-request-id, x-ms-version, x-ms-blob-type, ...). Authorisation, as the
service decides it:
  - a query with sig=: a SAS, whose signature is recomputed over its own fields with the SDK's
    helpers (blob, container or account SAS), and whose expiry, start, permission and protocol
    are checked (azure_shared_key.sas_refusal);
  - an Authorization header: Shared Key, recomputed with the SDK's SharedKeyCredentialPolicy on
    the request as received (its Range line read from Range: azure_shared_key.ServiceSharedKeyPolicy);
    x-ms-version and an x-ms-date within 15 minutes are required;
  - neither: anonymous, allowed only in a public container (else 404 ResourceNotFound, as Azure
    answers).
A refusal is Azure's XML error (403 AuthenticationFailed with an AuthenticationErrorDetail that
quotes the signature received, as Azure's does) and its x-ms-error-code header. `requests` logs
each request: method, path, auth ("shared_key", "sas", "anonymous"), Range, status.
Raises ImportError where azure-storage-blob is not installed.
"""
import datetime
import email.utils
import http.server
import os
import re
import ssl
import subprocess
import tempfile
import threading
import uuid
from urllib.parse import parse_qsl, unquote, urlsplit
from xml.sax.saxutils import escape

from azure.storage.blob import generate_account_sas, generate_blob_sas, generate_container_sas
from azure_shared_key import ServiceSharedKeyPolicy, sas_refusal, sdk_authorization

AUTHENTICATION_FAILED = ("Server failed to authenticate the request. Make sure the value of Authorization header "
                         "is formed correctly including the signature.")
CHUNK_BYTES = 1 << 20


class Refusal(Exception):
    def __init__(self, status, code, message, detail=None):
        super().__init__(code)
        self.status, self.code, self.message, self.detail = status, code, message, detail


def _http_date(when):
    return email.utils.format_datetime(when, usegmt=True)


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def version_string(self):
        return "Windows-Azure-Blob/1.0 Microsoft-HTTPAPI/2.0"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.serve()

    def do_HEAD(self):
        self.serve()

    def serve(self):
        azure = self.server.azure
        self.auth = None
        try:
            container, blob, params = self.parse_target()
            self.authorise(container, blob, params)
            status = self.send_blob(azure.blob_path(container, blob))
        except Refusal as refusal:
            status = refusal.status
            self.send_error_document(refusal)
        azure.log(self.command, self.path, self.auth, self.headers.get("x-ms-range") or self.headers.get("Range"),
                  status)

    def parse_target(self):
        azure = self.server.azure
        split = urlsplit(self.path)
        parts = split.path.split("/", 3)
        if len(parts) < 4 or parts[1] != azure.account or not parts[2] or not parts[3]:
            raise Refusal(400, "InvalidUri", "The requested URI does not represent any resource on the server.")
        return unquote(parts[2]), unquote(parts[3]), dict(parse_qsl(split.query, keep_blank_values=True))

    def authorise(self, container, blob, params):
        azure = self.server.azure
        if "sig" in params:
            self.auth = "sas"
            why = sas_refusal(params, azure.account, azure.key, container, blob, azure.scheme)
            if why is not None:
                raise Refusal(403, "AuthenticationFailed", AUTHENTICATION_FAILED, why)
            return
        authorization = self.headers.get("Authorization")
        if authorization is None:
            self.auth = "anonymous"
            if container not in azure.public:
                raise Refusal(404, "ResourceNotFound", "The specified resource does not exist.")
            return
        self.auth = "shared_key"
        self.check_shared_key(authorization)

    def check_shared_key(self, authorization):
        azure = self.server.azure
        if not self.headers.get("x-ms-version"):
            raise Refusal(400, "MissingRequiredHeader", "An HTTP header that's mandatory for this request is not "
                                                        "specified.")
        sent = email.utils.parsedate_to_datetime(self.headers.get("x-ms-date") or "Thu, 01 Jan 1970 00:00:00 GMT")
        if abs((datetime.datetime.now(datetime.timezone.utc) - sent).total_seconds()) > 15 * 60:
            raise Refusal(403, "AuthenticationFailed", AUTHENTICATION_FAILED,
                          "Request date header too old: " + self.headers.get("x-ms-date", ""))
        headers = {name.lower(): value for name, value in self.headers.items() if name.lower() != "authorization"}
        url = f"{azure.scheme}://{self.headers.get('Host', '127.0.0.1')}{self.path}"
        policy = ServiceSharedKeyPolicy(azure.account, azure.key)
        expected, string_to_sign = sdk_authorization(policy, self.command, url, headers)
        if authorization != expected:
            raise Refusal(403, "AuthenticationFailed", AUTHENTICATION_FAILED,
                          f"The MAC signature found in the HTTP request '{authorization.split(':', 1)[-1]}' is not "
                          f"the same as any computed signature. Server used following string to sign: "
                          f"'{string_to_sign}'.")

    def requested_range(self, size):
        """(first, last) of the Range asked for, None for the whole blob."""
        header = self.headers.get("x-ms-range") or self.headers.get("Range")
        if header is None:
            return None
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", header.strip())
        if match is None:
            raise Refusal(400, "InvalidHeaderValue", "The value for one of the HTTP headers is not in the correct "
                                                     "format.")
        first = int(match.group(1))
        if first >= size:
            raise Refusal(416, "InvalidRange", "The range specified is invalid for the current size of the resource.")
        return first, min(int(match.group(2)) if match.group(2) else size - 1, size - 1)

    def send_blob(self, path):
        stat = os.stat(path)
        span = self.requested_range(stat.st_size)
        first, last = span if span else (0, stat.st_size - 1)
        status = 206 if span else 200
        self.send_response(status)
        modified = datetime.datetime.fromtimestamp(int(stat.st_mtime), datetime.timezone.utc)
        for name, value in (("Content-Length", str(last - first + 1)), ("Content-Type", "application/octet-stream"),
                            ("ETag", f'"0x8D{stat.st_mtime_ns:X}"'), ("Last-Modified", _http_date(modified)),
                            ("Accept-Ranges", "bytes"), ("x-ms-request-id", str(uuid.uuid4())),
                            ("x-ms-version", self.headers.get("x-ms-version") or "2009-09-19"),
                            ("x-ms-creation-time", _http_date(modified)), ("x-ms-blob-type", "BlockBlob"),
                            ("x-ms-lease-status", "unlocked"), ("x-ms-lease-state", "available"),
                            ("x-ms-server-encrypted", "true"),
                            ("Date", _http_date(datetime.datetime.now(datetime.timezone.utc)))):
            self.send_header(name, value)
        if span:
            self.send_header("Content-Range", f"bytes {first}-{last}/{stat.st_size}")
        self.end_headers()
        if self.command == "GET":
            with open(path, "rb") as f:
                f.seek(first)
                left = last - first + 1
                while left > 0:
                    chunk = f.read(min(CHUNK_BYTES, left))
                    self.wfile.write(chunk)
                    left -= len(chunk)
        return status

    def send_error_document(self, refusal):
        request_id = str(uuid.uuid4())
        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f0Z")
        detail = (f"<AuthenticationErrorDetail>{escape(refusal.detail)}</AuthenticationErrorDetail>"
                  if refusal.detail else "")
        body = ('\ufeff<?xml version="1.0" encoding="utf-8"?><Error>'
                f"<Code>{refusal.code}</Code><Message>{escape(refusal.message)}\nRequestId:{request_id}\n"
                f"Time:{now}</Message>{detail}</Error>").encode("utf-8")
        self.send_response(refusal.status)
        for name, value in (("Content-Type", "application/xml"), ("Content-Length", str(len(body))),
                            ("x-ms-error-code", refusal.code), ("x-ms-request-id", request_id),
                            ("x-ms-version", self.headers.get("x-ms-version") or "2009-09-19")):
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


class AzureServer:
    def __init__(self, account, key, tls=False):
        self.account = account
        self.key = key
        self.scheme = "https" if tls else "http"
        self.public = set()
        self.requests = []
        self._blobs = {}  # (container, blob) -> local path; a container maps to None
        self._lock = threading.Lock()
        self._dir = tempfile.mkdtemp(prefix="ringload-azure-")
        self.tls_cert = os.path.join(self._dir, "cert.pem") if tls else None  # self-signed: also the CA to trust

    def __enter__(self):
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.azure = self
        if self.tls_cert:
            key = os.path.join(self._dir, "key.pem")
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj",
                            "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", key, "-out",
                            self.tls_cert], check=True, capture_output=True, timeout=60)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(self.tls_cert, key)
            context.set_alpn_protocols(["http/1.1"])
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self.endpoint = f"{self.scheme}://127.0.0.1:{self.port}/{self.account}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()
        for name in os.listdir(self._dir):
            os.remove(os.path.join(self._dir, name))
        os.rmdir(self._dir)

    def create_container(self, name, public=False):
        self._blobs[(name, None)] = None
        if public:
            self.public.add(name)

    def put(self, container, blob, path):
        self._blobs[(container, blob)] = path

    def blob_path(self, container, blob):
        if (container, None) not in self._blobs:
            raise Refusal(404, "ContainerNotFound", "The specified container does not exist.")
        if (container, blob) not in self._blobs:
            raise Refusal(404, "BlobNotFound", "The specified blob does not exist.")
        return self._blobs[(container, blob)]

    def log(self, method, path, auth, byte_range, status):
        with self._lock:
            self.requests.append({"method": method, "path": path, "auth": auth, "range": byte_range,
                                  "status": status})

    def connection_string(self, key=None, sas=None):
        """BlobEndpoint (this server) and AccountName, with AccountKey and/or SharedAccessSignature."""
        parts = [f"BlobEndpoint={self.endpoint}", f"AccountName={self.account}"]
        parts += [f"AccountKey={key}"] if key else []
        parts += [f"SharedAccessSignature={sas}"] if sas else []
        return ";".join(parts)

    @staticmethod
    def _expiry(hours):
        return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=hours)

    def blob_sas(self, container, blob, permission="r", hours=1, **kwargs):
        return generate_blob_sas(self.account, container, blob, account_key=self.key, permission=permission,
                                 expiry=self._expiry(hours), **kwargs)

    def container_sas(self, container, permission="rl", hours=1, **kwargs):
        return generate_container_sas(self.account, container, account_key=self.key, permission=permission,
                                      expiry=self._expiry(hours), **kwargs)

    def account_sas(self, permission="rl", hours=1, **kwargs):
        return generate_account_sas(self.account, self.key, resource_types="sco", permission=permission,
                                    expiry=self._expiry(hours), **kwargs)
