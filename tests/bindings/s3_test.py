#!/usr/bin/env python3
"""tests/bindings/s3_test.py RINGLOAD DATA_DIR

`ringload` with s3:// URIs against a real S3-compatible server, moto, started here on 127.0.0.1
(tests/support/s3_server.py), with moto checking every SigV4 signature:
  - every tensorizer fixture, uploaded with boto3, loads (hashes verified, keys given for the
    encrypted ones) with its manifest's names, dtypes, shapes and sha256, credentials from the
    environment; `info` works too;
  - credentials from a ~/.aws/credentials profile (AWS_PROFILE), from ~/.aws/config's
    [profile x], from ~/.s3cfg (whose host_base is also the endpoint), temporary credentials
    with a session token; the endpoint from AWS_ENDPOINT_URL_S3;
  - a wrong secret fails with one line naming S3's SignatureDoesNotMatch and neither secret; a
    bad session token and an unknown key id fail too; a missing key is "not found" (NoSuchKey);
  - anonymous reads (no credentials anywhere): a public-read object loads, keys with characters
    that need percent-encoding included; a private one is refused (AccessDenied);
  - `ringload convert IN s3://...` writes what a local convert writes, byte for byte (boto3
    downloads it): a small file in one PutObject, a 3-part multipart upload (--range-size 5 MiB);
  - a multipart upload whose second part keeps failing (503 from a proxy) fails, aborts the
    upload and leaves neither an object nor stored parts; a missing bucket fails clearly.
Exits 77 (skipped, with the reason) where moto or boto3 is not installed.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from cli_runs import CliRuns, expected, loaded, one_line  # noqa: E402
import cli_runs  # noqa: E402
from fixture_keys import key_args  # noqa: E402
from s3_server import MotoServer, S3FaultProxy  # noqa: E402

RINGLOAD, DATA = sys.argv[1:3]
checks = Checks()
check = checks.check
try:
    import boto3  # noqa: F401
    import botocore.exceptions
except ImportError as error:
    print(f"SKIP: boto3 is not importable ({error}); scripts/setup.sh installs it in .venv")
    sys.exit(77)
try:
    server = MotoServer()
except RuntimeError as error:
    print(f"SKIP: {error}")
    sys.exit(77)

BUCKET = "models"
WRONG_SECRET = "wrong-secret-0123456789abcdefghijklmnopqrs"


CLI = CliRuns(RINGLOAD, DATA)
run, manifest_of = CLI.run, CLI.manifest_of


def clean_env(home, **extra):
    """The process's environment without any AWS setting, HOME set to `home`, plus `extra`."""
    return cli_runs.clean_env(home, ("AWS_",), **extra)



def exists(client, key):
    try:
        client.head_object(Bucket=BUCKET, Key=key)
        return True
    except botocore.exceptions.ClientError:
        return False


def large_checkpoint(path):
    """A tensorizer file over 3 parts of 5 MiB, written by the real tensorizer (the .venv's)."""
    import torch
    from tensorizer import TensorSerializer
    serializer = TensorSerializer(path)
    generator = torch.Generator().manual_seed(7)
    serializer.write_state_dict({f"layer{i}.weight": torch.randn(1024, 1024, generator=generator) for i in range(4)})
    serializer.close()


index = json.load(open(os.path.join(DATA, "tensorizer", "index.json")))
large = manifest_of("large_mixed_v2.tensors")
large_path = os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors")

with server as s3, tempfile.TemporaryDirectory() as tmp:
    empty_home = os.path.join(tmp, "home-empty")
    os.makedirs(empty_home)
    secrets = os.path.join(tmp, "secrets")
    os.makedirs(secrets)

    # Set-up, with moto's signature checks off: an IAM user, a role, the objects.
    admin = s3.client()
    admin.create_bucket(Bucket=BUCKET)
    key_id, secret = s3.create_user()
    role_key, role_secret, role_token = s3.assume_role()
    for entry in index["files"]:
        admin.upload_file(os.path.join(DATA, "tensorizer", entry["file"]), BUCKET, "tensorizer/" + entry["file"])
    # moto checks signatures wrongly for keys that need percent-encoding (boto3's own requests
    # fail there too): such keys are read anonymously below, and their signing is compared
    # with botocore's in tests/io/sigv4_botocore_test.py.
    odd_key = "public/dir with space/a+b=c&d~e.tensors"
    admin.upload_file(large_path, BUCKET, odd_key, ExtraArgs={"ACL": "public-read"})
    admin.upload_file(os.path.join(DATA, "tensorizer", "basic_v1.tensors"), BUCKET, "public/basic_v1.tensors",
                      ExtraArgs={"ACL": "public-read"})
    admin.upload_file(os.path.join(DATA, "tensorizer", "basic_v1.tensors"), BUCKET, "private/basic_v1.tensors",
                      ExtraArgs={"ACL": "private"})
    endpoint = ["--s3-endpoint", s3.url]
    with_keys = clean_env(empty_home, AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret)

    s3.require_signatures(True)
    admin = s3.client(key=key_id, secret=secret)  # "admin" is no IAM key: signed checks need a real one

    # Every fixture over signed range reads, credentials from the environment.
    for entry in index["files"]:
        manifest = manifest_of(entry["file"])
        uri = f"s3://{BUCKET}/tensorizer/{entry['file']}"
        out = run(with_keys, "load", uri, *endpoint, "--json", "--sha256", "--verify", *key_args(manifest, secrets))
        check(f"s3 {entry['file']} exit", out.returncode == 0, out.stderr)
        check(f"s3 {entry['file']} values", loaded(out) == expected(manifest))
        info = run(with_keys, "info", uri, *endpoint, "--json")
        check(f"s3 info {entry['file']}", info.returncode == 0 and
              json.loads(info.stdout)["data_version"] == manifest["data_version"], info.stderr)
    large_uri = f"s3://{BUCKET}/tensorizer/large_mixed_v2.tensors"
    out = run(with_keys, "load", large_uri, *endpoint, "--json", "--sha256", "--verify", "--connections", "1",
              "--range-size", "1048576")
    check("s3 1 connection, 1 MiB ranges", loaded(out) == expected(large), out.stderr)

    # The endpoint from AWS_ENDPOINT_URL_S3 instead of --s3-endpoint.
    out = run(clean_env(empty_home, AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=secret,
                        AWS_ENDPOINT_URL_S3=s3.url), "load", large_uri, "--json", "--sha256", "--verify")
    check("s3 endpoint from AWS_ENDPOINT_URL_S3", loaded(out) == expected(large), out.stderr)

    # Credentials from a ~/.aws/credentials profile named by AWS_PROFILE, region from ~/.aws/config.
    profile_home = os.path.join(tmp, "home-profile")
    os.makedirs(os.path.join(profile_home, ".aws"))
    with open(os.path.join(profile_home, ".aws", "credentials"), "w") as f:
        f.write(f"[default]\naws_access_key_id = AKIAUNKNOWN\naws_secret_access_key = {WRONG_SECRET}\n\n"
                f"[ringload]\naws_access_key_id = {key_id}\naws_secret_access_key = {secret}\n")
    with open(os.path.join(profile_home, ".aws", "config"), "w") as f:
        f.write(f"[profile ringload]\nregion = us-east-1\n\n[profile fromconfig]\naws_access_key_id = {key_id}\n"
                f"aws_secret_access_key = {secret}\n")
    out = run(clean_env(profile_home, AWS_PROFILE="ringload"), "load", large_uri, *endpoint, "--json", "--sha256")
    check("s3 credentials from ~/.aws/credentials [ringload]", loaded(out) == expected(large), out.stderr)
    out = run(clean_env(profile_home, AWS_PROFILE="fromconfig"), "load", large_uri, *endpoint, "--json", "--sha256")
    check("s3 credentials from ~/.aws/config [profile fromconfig]", loaded(out) == expected(large), out.stderr)
    out = run(clean_env(profile_home, AWS_PROFILE="nosuch"), "load", large_uri, *endpoint)
    check("s3 missing profile", out.returncode != 0 and "'nosuch'" in out.stderr and one_line(out.stderr), out.stderr)

    # Credentials and the endpoint from ~/.s3cfg (as tensorizer's users have it): no --s3-endpoint.
    s3cfg_home = os.path.join(tmp, "home-s3cfg")
    os.makedirs(s3cfg_home)
    with open(os.path.join(s3cfg_home, ".s3cfg"), "w") as f:
        f.write(f"[default]\naccess_key = {key_id}\nsecret_key = {secret}\nhost_base = 127.0.0.1:{s3.port}\n"
                f"host_bucket = 127.0.0.1:{s3.port}\nuse_https = False\n")
    out = run(clean_env(s3cfg_home), "load", large_uri, "--json", "--sha256", "--verify")
    check("s3 credentials and endpoint from ~/.s3cfg", loaded(out) == expected(large), out.stderr)

    # Temporary credentials: the session token goes along (x-amz-security-token) and is checked.
    out = run(clean_env(empty_home, AWS_ACCESS_KEY_ID=role_key, AWS_SECRET_ACCESS_KEY=role_secret,
                        AWS_SESSION_TOKEN=role_token), "load", large_uri, *endpoint, "--json", "--sha256")
    check("s3 session token", loaded(out) == expected(large), out.stderr)
    out = run(clean_env(empty_home, AWS_ACCESS_KEY_ID=role_key, AWS_SECRET_ACCESS_KEY=role_secret,
                        AWS_SESSION_TOKEN="not-the-token"), "load", large_uri, *endpoint)
    check("s3 bad session token refused", out.returncode != 0 and "InvalidToken" in out.stderr and
          role_secret not in out.stderr and role_token not in out.stderr
          and one_line(out.stderr), out.stderr)

    # A wrong secret: S3's reason, the URI, where the credentials came from; never a secret.
    out = run(clean_env(empty_home, AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=WRONG_SECRET),
              "load", large_uri, *endpoint)
    check("s3 wrong secret refused", out.returncode != 0 and "SignatureDoesNotMatch" in out.stderr and
          large_uri in out.stderr and "AWS_ACCESS_KEY_ID" in out.stderr and one_line(out.stderr), out.stderr)
    check("s3 wrong secret not printed", WRONG_SECRET not in out.stderr and WRONG_SECRET not in out.stdout and
          secret not in out.stderr, out.stderr)
    out = run(clean_env(empty_home, AWS_ACCESS_KEY_ID="AKIANOSUCHKEY0000000", AWS_SECRET_ACCESS_KEY=secret),
              "load", large_uri, *endpoint)
    check("s3 unknown key id refused", out.returncode != 0 and "InvalidAccessKeyId" in out.stderr and
          secret not in out.stderr and one_line(out.stderr), out.stderr)

    # A missing key.
    missing = f"s3://{BUCKET}/tensorizer/missing.tensors"
    out = run(with_keys, "load", missing, *endpoint)
    check("s3 missing key", out.returncode != 0 and "not found" in out.stderr and "NoSuchKey" in out.stderr and
          missing in out.stderr and one_line(out.stderr), out.stderr)

    # Uploads. convert writes to s3:// what it writes locally.
    local_small = os.path.join(tmp, "small.tensors")
    subprocess.run([RINGLOAD, "convert", os.path.join(DATA, "tensorizer", "basic_v1.tensors"), local_small],
                   check=True, capture_output=True)
    out = run(with_keys, "convert", os.path.join(DATA, "tensorizer", "basic_v1.tensors"),
              f"s3://{BUCKET}/out/small.tensors", *endpoint)
    check("s3 convert small exit", out.returncode == 0, out.stderr)
    body = admin.get_object(Bucket=BUCKET, Key="out/small.tensors")["Body"].read() if out.returncode == 0 else b""
    check("s3 convert small bytes", body == open(local_small, "rb").read(), f"{len(body)} bytes")

    big_source = os.path.join(tmp, "big.tensors")
    try:
        large_checkpoint(big_source)
    except ImportError as error:
        big_source = None
        check("tensorizer importable for the multipart file", False, str(error))
    if big_source:
        local_big = os.path.join(tmp, "big-converted.tensors")
        subprocess.run([RINGLOAD, "convert", big_source, local_big], check=True, capture_output=True)
        size = os.path.getsize(local_big)
        check("multipart file is over 2 parts of 5 MiB", size > 2 * 5 * 2**20, str(size))
        big_uri = f"s3://{BUCKET}/out/dir/big.tensors"
        out = run(with_keys, "convert", big_source, big_uri, *endpoint, "--range-size", str(5 * 2**20))
        check("s3 convert multipart exit", out.returncode == 0, out.stderr)
        body = admin.get_object(Bucket=BUCKET, Key="out/dir/big.tensors")["Body"].read() if out.returncode == 0 else b""
        check("s3 convert multipart bytes", body == open(local_big, "rb").read(), f"{len(body)} vs {size} bytes")
        etag = admin.head_object(Bucket=BUCKET, Key="out/dir/big.tensors")["ETag"] if out.returncode == 0 else ""
        parts = -(-size // (5 * 2**20))
        check("s3 convert multipart part count", etag.endswith(f'-{parts}"') and parts >= 3, etag)
        out = run(with_keys, "load", big_uri, *endpoint, "--json", "--sha256", "--verify")
        check("s3 multipart object loads", out.returncode == 0, out.stderr)

        # A part that keeps failing: the upload is aborted; no object, no parts left behind.
        with S3FaultProxy(s3.port, lambda method, path: method == "PUT" and "partNumber=2" in path) as proxy:
            failed_uri = f"s3://{BUCKET}/out/failed.tensors"
            out = run(with_keys, "convert", big_source, failed_uri, "--s3-endpoint", proxy.url,
                      "--range-size", str(5 * 2**20), "--attempts", "2")
        check("s3 failed upload exit", out.returncode != 0 and "part 2" in out.stderr and "503" in out.stderr and
              "aborted" in out.stderr and one_line(out.stderr), out.stderr)
        check("s3 failed upload leaves no object", not exists(admin, "out/failed.tensors"))
        check("s3 failed upload leaves no parts", not admin.list_multipart_uploads(Bucket=BUCKET).get("Uploads"))

    out = run(with_keys, "convert", os.path.join(DATA, "tensorizer", "basic_v1.tensors"),
              "s3://no-such-bucket/x.tensors", *endpoint)
    check("s3 upload to a missing bucket", out.returncode != 0 and "NoSuchBucket" in out.stderr and
          one_line(out.stderr), out.stderr)
    out = run(clean_env(empty_home, AWS_ACCESS_KEY_ID=key_id, AWS_SECRET_ACCESS_KEY=WRONG_SECRET), "convert",
              os.path.join(DATA, "tensorizer", "basic_v1.tensors"), f"s3://{BUCKET}/out/wrong.tensors", *endpoint)
    check("s3 upload with a wrong secret", out.returncode != 0 and "SignatureDoesNotMatch" in out.stderr and
          WRONG_SECRET not in out.stderr and one_line(out.stderr), out.stderr)

    # Anonymous reads (no credentials anywhere), with moto's signature checks off: it refuses
    # unsigned requests outright while they are on.
    s3.require_signatures(False)
    anonymous = clean_env(empty_home)
    out = run(anonymous, "load", f"s3://{BUCKET}/public/basic_v1.tensors", *endpoint, "--json", "--sha256",
              "--verify")
    check("s3 anonymous public-read", loaded(out) == expected(manifest_of("basic_v1.tensors")), out.stderr)
    out = run(anonymous, "load", f"s3://{BUCKET}/{odd_key}", *endpoint, "--json", "--sha256", "--verify")
    check("s3 anonymous key that needs encoding", loaded(out) == expected(large), out.stderr)
    out = run(anonymous, "load", f"s3://{BUCKET}/private/basic_v1.tensors", *endpoint)
    check("s3 anonymous private refused", out.returncode != 0 and "403" in out.stderr and
          "anonymous" in out.stderr and one_line(out.stderr), out.stderr)

sys.exit(checks.finish())
