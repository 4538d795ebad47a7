#!/usr/bin/env python3
"""tests/tools/soak.py: the soak (tests/tools/soak.cpp) with network sources too (issue #27, part 4).

    soak.py SOAK CLI DATA [soak arguments: --seconds N --concurrency N --seed S ...]

Starts nginx (HTTP/1.1, h2c, https), moto (S3), redis-server and fake-gcs-server (GCS) on 127.0.0.1
(tests/support), puts models there (the largest tensorizer fixture as it is, and as safetensors
and torch zip written by `CLI convert`: under nginx's root, as objects of a bucket, and in
tensorizer's Redis key layout), and runs SOAK on DATA's fixtures plus a --remote for each
(its local twin giving the expectation) and a missing object of each server as a source that
must fail ("not found"). Every one of the four servers is part of the soak: one that is not
installed or does not start fails it (exit 1, naming the server and why), rather than leaving a
file-only soak that passes. Otherwise exits with the soak's status.
"""
import http.client
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import ExitStack

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import gcs_server  # noqa: E402
import nginx  # noqa: E402
import redis_server  # noqa: E402
import s3_server  # noqa: E402


def put(url, path, body=b""):
    """An unsigned PUT to moto (signatures are not checked until asked for)."""
    host = url.split("//", 1)[1]
    connection = http.client.HTTPConnection(host, timeout=60)
    connection.request("PUT", path, body=body)
    response = connection.getresponse()
    response.read()
    if response.status not in (200, 204):
        raise RuntimeError(f"PUT {path}: {response.status}")


def start(stack, name, make):
    """The server, started and stopped with `stack`; one that is missing or does not start ends
    the soak as failed (the servers already started are stopped on the way out)."""
    try:
        return stack.enter_context(make())
    except (RuntimeError, OSError, subprocess.SubprocessError) as error:
        raise SystemExit(f"soak.py: FAILED: {name} is needed by the network soak and did not start: {error}")


def models(cli, data, work):
    """name -> local path: the largest tensorizer fixture, a small one, and copies in the other formats."""
    tensors = os.path.join(data, "tensorizer", "large_mixed_v2.tensors")
    made = {"large_mixed.tensors": tensors, "basic.tensors": os.path.join(data, "tensorizer", "basic_v1.tensors"),
            "checkpoint_misc.pt": os.path.join(data, "torch", "checkpoint_misc.pt")}
    for name in ("large_mixed.safetensors", "large_mixed.pt"):
        path = os.path.join(work, name)
        subprocess.run([cli, "convert", tensors, path], check=True, capture_output=True, timeout=300)
        made[name] = path
    return made


def network_arguments(stack, cli, made, root):
    args = []
    web = start(stack, "nginx", lambda: nginx.Nginx(root))
    for name, path in made.items():
        args += ["--remote", path, f"{web.http_url}/{name}"]
    args += ["--http2-remote", made["large_mixed.pt"], f"{web.h2c_url}/large_mixed.pt"]
    args += ["--http2-remote", made["basic.tensors"], f"{web.h2c_url}/basic.tensors"]
    args += ["--remote", made["large_mixed.safetensors"], f"{web.https_url}/large_mixed.safetensors"]
    args += ["--ca-file", web.tls_cert, "--failing-url", f"{web.http_url}/missing.tensors", "not found"]
    s3 = start(stack, "moto", s3_server.MotoServer)
    put(s3.url, "/models")
    for name in ("large_mixed.tensors", "large_mixed.safetensors", "checkpoint_misc.pt"):
        with open(made[name], "rb") as f:
            put(s3.url, f"/models/{name}", f.read())
        args += ["--remote", made[name], f"s3://models/{name}"]
    args += ["--s3-endpoint", s3.url, "--failing-url", "s3://models/missing.safetensors", "not found"]
    os.environ.update(AWS_ACCESS_KEY_ID="admin", AWS_SECRET_ACCESS_KEY="admin", AWS_REGION="us-east-1")
    redis = start(stack, "redis-server", redis_server.RedisServer)
    uri = redis.uri + "/large_mixed"
    subprocess.run([cli, "convert", made["large_mixed.tensors"], uri], check=True, capture_output=True,
                   timeout=300)
    args += ["--remote", made["large_mixed.tensors"], uri, "--failing-url", redis.uri + "/missing", "not found"]
    gcs = start(stack, "fake-gcs-server", gcs_server.FakeGcsServer)
    gcs.create_bucket("models")
    for name in ("large_mixed.tensors", "large_mixed.safetensors", "checkpoint_misc.pt"):
        gcs.upload("models", name, made[name])
        args += ["--remote", made[name], f"gs://models/{name}"]
    args += ["--failing-url", "gs://models/missing.safetensors", "not found"]
    # The emulator checks no token: no credentials, and a metadata server that refuses at once
    # (port 1), so that every open goes anonymous without waiting for one.
    os.environ.update(STORAGE_EMULATOR_HOST=gcs.url, GCE_METADATA_HOST="127.0.0.1:1")
    return args


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    soak, cli, data, rest = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    work = tempfile.mkdtemp(prefix="ringload-soak-")
    os.chmod(work, 0o755)  # nginx's workers (nobody, when run as root) read the root under it
    try:
        root = os.path.join(work, "root")
        os.mkdir(root)
        made = models(cli, data, work)
        for name, path in made.items():
            shutil.copyfile(path, os.path.join(root, name))
        with ExitStack() as stack:
            command = [soak, "--data", data] + network_arguments(stack, cli, made, root) + rest
            print("soak.py: " + " ".join(command), flush=True)
            return subprocess.run(command).returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
