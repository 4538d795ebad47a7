"""tests/support/s3_server.py: a real S3-compatible server (moto in server mode) on 127.0.0.1.

    with MotoServer() as s3:
        admin = s3.client()                      # boto3, for set-up and checks
        admin.create_bucket(Bucket="models")
        key, secret = s3.create_user()           # an IAM user allowed s3:*
        s3.require_signatures(True)              # from now on moto checks every SigV4 signature
        ... ringload ... --s3-endpoint s3.url

moto runs from the project's .venv-moto (scripts/setup.sh makes it: moto has dependencies
that the main .venv, installed with --no-deps beside Debian's torch, must not take), else from
any python3 that can import moto.server. Raises RuntimeError with the reason when there is none,
so that callers can exit 77 (skipped).

moto checks signatures only with its IAM emulation on (INITIAL_NO_AUTH_ACTION_COUNT), and
then only for keys it issued: set-up runs with checks off, require_signatures(True) turns them
on (and False off again, for anonymous reads, which moto refuses outright while they are on).

Also S3FaultProxy: an HTTP proxy in front of moto that answers some requests 503 itself.
"""
import http.client
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

from processes import free_port, stop_process

REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
ADMIN_POLICY = json.dumps({"Version": "2012-10-17",
                           "Statement": [{"Effect": "Allow", "Action": ["s3:*", "sts:*"], "Resource": "*"}]})
TRUST_POLICY = json.dumps({"Version": "2012-10-17",
                           "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]})


def moto_python():
    candidates = [os.path.join(REPO, ".venv-moto", "bin", "python"), sys.executable, "/usr/bin/python3"]
    for python in candidates:
        if os.path.exists(python) and subprocess.run([python, "-c", "import moto.server"],
                                                     capture_output=True).returncode == 0:
            return python
    return None


class MotoServer:
    def __init__(self):
        self.python = moto_python()
        if self.python is None:
            raise RuntimeError("moto is not installed (scripts/setup.sh puts it in .venv-moto)")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = None
        self.user_count = 0

    def __enter__(self):
        self.log = open(os.devnull, "wb")
        self.process = subprocess.Popen([self.python, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/moto-api/data.json", timeout=2).read()
                break
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.__exit__()
                    raise RuntimeError("moto did not start on " + self.url)
                time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        stop_process(self.process)
        self.log.close()

    def client(self, service="s3", key="admin", secret="admin", token=None):
        import boto3
        from botocore.config import Config
        return boto3.client(service, endpoint_url=self.url, region_name="us-east-1", aws_access_key_id=key,
                            aws_secret_access_key=secret, aws_session_token=token,
                            config=Config(s3={"addressing_style": "path"}))

    def require_signatures(self, on):
        # moto counts requests before checking; "0" checks from now on, "inf" never.
        # (A form content type would make Flask swallow the body.)
        request = urllib.request.Request(self.url + "/moto-api/reset-auth", data=b"0" if on else b"inf",
                                         headers={"Content-Type": "application/octet-stream"}, method="POST")
        urllib.request.urlopen(request, timeout=10).read()

    def create_user(self):
        """An IAM user allowed s3:* and sts:*; returns (access key id, secret). Signatures must be off."""
        iam = self.client("iam")
        self.user_count += 1
        name = f"ringload-test-{self.user_count}"
        iam.create_user(UserName=name)
        iam.put_user_policy(UserName=name, PolicyName="all-s3", PolicyDocument=ADMIN_POLICY)
        key = iam.create_access_key(UserName=name)["AccessKey"]
        return key["AccessKeyId"], key["SecretAccessKey"]

    def assume_role(self):
        """Temporary credentials of a role allowed s3:*: (key id, secret, session token)."""
        iam = self.client("iam")
        role = iam.create_role(RoleName="ringload-test-role", AssumeRolePolicyDocument=TRUST_POLICY)["Role"]
        iam.put_role_policy(RoleName="ringload-test-role", PolicyName="all-s3", PolicyDocument=ADMIN_POLICY)
        got = self.client("sts").assume_role(RoleArn=role["Arn"], RoleSessionName="ringload")["Credentials"]
        return got["AccessKeyId"], got["SecretAccessKey"], got["SessionToken"]


class S3FaultProxy:
    """Forwards HTTP/1.1 requests to moto unchanged (Host included, so signatures still match),
    except those for which fail(method, path) is true: they get a 503 of the proxy's own.

        with S3FaultProxy(s3.port, lambda method, path: "partNumber=2" in path) as proxy:
            ... --s3-endpoint proxy.url ...
    """

    def __init__(self, upstream_port, fail):
        upstream = upstream_port
        failing = fail

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def relay(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if failing(self.command, self.path):
                    self.send_response(503)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                connection = http.client.HTTPConnection("127.0.0.1", upstream, timeout=60)
                connection.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    connection.putheader(name, value)
                connection.endheaders(body)
                response = connection.getresponse()
                data = response.read()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection", "server", "date"):
                        self.send_header(name, value)
                # A HEAD's answer has no body but says the object's length.
                length = response.getheader("Content-Length") if self.command == "HEAD" else None
                self.send_header("Content-Length", length or str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                connection.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = relay

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
