#!/usr/bin/env python3
"""tests/bindings/gcs_test.py RINGLOAD DATA_DIR

`ringload` with gs:// URIs against a real GCS emulator, fake-gcs-server, started here on
127.0.0.1, behind a proxy that accepts only bearer tokens our stand-in token endpoint issued
(tests/support/gcs_server.py: the emulator itself checks none):
  - every tensorizer fixture loads (hashes verified, keys given for the encrypted ones) with its
    manifest's names, dtypes, shapes and sha256, the endpoint from STORAGE_EMULATOR_HOST and a
    service account from GOOGLE_APPLICATION_CREDENTIALS: a JWT signed with its key (verified by
    the stand-in: RS256, iss, aud, scope, iat, exp) traded for a token that every request
    carries; one token exchange for a whole load on 8 connections; `info` works too;
  - the same through --gcs-endpoint and --gcs-credentials; a user's authorized_user file in
    gcloud's folder; the metadata server's token (GCE_METADATA_HOST) when nothing else is there;
  - a token with a short life is replaced during a load (more exchanges, the load still right);
  - a key the token endpoint does not know fails with one line naming the token URL and
    invalid_grant, and neither key nor token; a missing object names the gs:// URI;
  - anonymous reads (no credentials anywhere and no metadata server, or --gcs-anonymous) load
    from the emulator directly, an object name that needs percent-encoding included, and are
    refused (401, "anonymous") by the proxy;
  - range reads through tests/support/fault_proxy.py (a reset, a 503, a cut) are retried;
  - `ringload convert IN gs://...` writes what a local convert writes, byte for byte: in one
    chunk, and in 8 chunks of 1 MiB (--range-size), which load back; a chunk refused once (503)
    is resumed after a status query; a chunk that keeps failing fails the upload, which is
    cancelled and leaves no object.
Exits 77 (skipped, with the reason) where fake-gcs-server is not installed.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from cli_runs import CliRuns, expected, loaded, one_line  # noqa: E402
import cli_runs  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402
from fixture_keys import key_args  # noqa: E402
from gcs_server import READ_ONLY, READ_WRITE, FakeGcsServer, GcsProxy, TokenServer  # noqa: E402

RINGLOAD, DATA = sys.argv[1:3]
checks = Checks()
check = checks.check
try:
    gcs = FakeGcsServer()
except RuntimeError as error:
    print(f"SKIP: {error}")
    sys.exit(77)

BUCKET = "models"
MIB = 2**20


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Where no metadata server answers (connection refused at once): "none found" means anonymous
# without the probe's timeout.
NO_METADATA = f"127.0.0.1:{closed_port()}"


CLI = CliRuns(RINGLOAD, DATA)
run, manifest_of = CLI.run, CLI.manifest_of


def clean_env(home, **extra):
    """The process's environment without any Google setting, HOME set to `home`, no metadata
    server (NO_METADATA), plus `extra`."""
    return cli_runs.clean_env(home, ("GOOGLE_", "GCE_", "STORAGE_EMULATOR_HOST", "CLOUDSDK_"),
                              **dict({"GCE_METADATA_HOST": NO_METADATA}, **extra))



def no_secret(out, tokens, key_file):
    """Neither an issued token nor the key file's private key appears in the output."""
    text = out.stdout + out.stderr
    key = json.load(open(key_file))["private_key"].splitlines()[1] if key_file else None
    return not any(token in text for token in tokens.issued()) and (key is None or key not in text)


def fixture(name):
    return os.path.join(DATA, "tensorizer", name)


index = json.load(open(os.path.join(DATA, "tensorizer", "index.json")))
large = manifest_of("large_mixed_v2.tensors")
large_uri = f"gs://{BUCKET}/tensorizer/large_mixed_v2.tensors"

with gcs, TokenServer() as tokens, GcsProxy(gcs, tokens) as proxy, tempfile.TemporaryDirectory() as tmp:
    empty_home = os.path.join(tmp, "home-empty")
    os.makedirs(empty_home)
    secrets_dir = os.path.join(tmp, "secrets")
    os.makedirs(secrets_dir)
    gcs.create_bucket(BUCKET)
    for entry in index["files"]:
        gcs.upload(BUCKET, "tensorizer/" + entry["file"], fixture(entry["file"]))
    odd_name = "public/dir with space/a+b=c&d~e%20.tensors"
    gcs.upload(BUCKET, odd_name, fixture("large_mixed_v2.tensors"))
    key_file = tokens.service_account(os.path.join(tmp, "sa.json"))
    with_key = clean_env(empty_home, STORAGE_EMULATOR_HOST=proxy.url, GOOGLE_APPLICATION_CREDENTIALS=key_file)

    # Every fixture over authorised range reads.
    for entry in index["files"]:
        manifest = manifest_of(entry["file"])
        uri = f"gs://{BUCKET}/tensorizer/{entry['file']}"
        out = run(with_key, "load", uri, "--json", "--sha256", "--verify", *key_args(manifest, secrets_dir))
        check(f"gcs {entry['file']} exit", out.returncode == 0, out.stderr)
        check(f"gcs {entry['file']} values", loaded(out) == expected(manifest))
        info = run(with_key, "info", uri, "--json")
        check(f"gcs info {entry['file']}", info.returncode == 0 and
              json.loads(info.stdout)["data_version"] == manifest["data_version"], info.stderr)
    check("gcs every request carried a token", proxy.requests and
          all(auth.startswith("Bearer ya29.test-") for auth in proxy.authorizations()), proxy.requests[:3])
    check("gcs reads asked for read_only", tokens.scopes and set(tokens.scopes) == {READ_ONLY}, tokens.scopes)

    before = tokens.exchanges
    out = run(with_key, "load", large_uri, "--json", "--sha256", "--verify", "--connections", "8",
              "--range-size", str(MIB))
    check("gcs 8 connections, 1 MiB ranges", loaded(out) == expected(large), out.stderr)
    check("gcs one token exchange for a whole load", tokens.exchanges == before + 1, tokens.exchanges - before)

    # The endpoint and the key file through the CLI's options instead of the environment.
    out = run(clean_env(empty_home), "load", large_uri, "--gcs-endpoint", proxy.url, "--gcs-credentials", key_file,
              "--json", "--sha256")
    check("gcs --gcs-endpoint and --gcs-credentials", loaded(out) == expected(large), out.stderr)

    # A user's credentials in gcloud's folder (application default credentials).
    user_home = os.path.join(tmp, "home-user")
    tokens.authorized_user(os.path.join(user_home, ".config", "gcloud", "application_default_credentials.json"))
    out = run(clean_env(user_home, STORAGE_EMULATOR_HOST=proxy.url), "load", large_uri, "--json", "--sha256")
    check("gcs authorized_user from gcloud's folder", loaded(out) == expected(large), out.stderr)

    # Nothing but the metadata server.
    before = tokens.exchanges
    out = run(clean_env(empty_home, STORAGE_EMULATOR_HOST=proxy.url, GCE_METADATA_HOST=tokens.metadata_host),
              "load", large_uri, "--json", "--sha256")
    check("gcs metadata server token", loaded(out) == expected(large) and tokens.exchanges == before + 1, out.stderr)

    # A short-lived token is replaced while the load goes on (each range waits 50 ms at the
    # proxy; the proxy refuses expired tokens).
    tokens.expires_in = 2
    proxy.delay_s = 0.05
    before = tokens.exchanges
    out = run(with_key, "load", large_uri, "--json", "--sha256", "--verify", "--connections", "1",
              "--range-size", str(256 * 1024))
    check("gcs short-lived tokens load", loaded(out) == expected(large), out.stderr)
    check("gcs short-lived tokens replaced", tokens.exchanges - before >= 2, tokens.exchanges - before)
    tokens.expires_in = 3600
    proxy.delay_s = 0.0

    # A key the token endpoint does not know: its URL and reason; no key, no token.
    wrong_key = tokens.service_account(os.path.join(tmp, "wrong.json"), register=False)
    out = run(clean_env(empty_home, STORAGE_EMULATOR_HOST=proxy.url, GOOGLE_APPLICATION_CREDENTIALS=wrong_key),
              "load", large_uri)
    check("gcs unknown key refused", out.returncode != 0 and tokens.token_uri in out.stderr and
          "invalid_grant" in out.stderr and large_uri in out.stderr and one_line(out.stderr), out.stderr)
    check("gcs unknown key not printed", no_secret(out, tokens, wrong_key), out.stderr)

    # A missing object.
    missing = f"gs://{BUCKET}/tensorizer/missing.tensors"
    out = run(with_key, "load", missing)
    check("gcs missing object", out.returncode != 0 and "not found" in out.stderr and missing in out.stderr and
          one_line(out.stderr) and no_secret(out, tokens, key_file), out.stderr)

    # Anonymous: straight to the emulator (which checks nothing), and refused by the proxy.
    anonymous = clean_env(empty_home, STORAGE_EMULATOR_HOST=gcs.url)
    out = run(anonymous, "load", f"gs://{BUCKET}/{odd_name}", "--json", "--sha256", "--verify")
    check("gcs anonymous, a name that needs encoding", loaded(out) == expected(large), out.stderr)
    out = run(clean_env(empty_home, STORAGE_EMULATOR_HOST=gcs.url, GOOGLE_APPLICATION_CREDENTIALS=wrong_key),
              "load", f"gs://{BUCKET}/tensorizer/basic_v1.tensors", "--gcs-anonymous", "--json", "--sha256")
    check("gcs --gcs-anonymous over a key file", loaded(out) == expected(manifest_of("basic_v1.tensors")), out.stderr)
    for entry in index["files"]:  # every fixture anonymously too
        manifest = manifest_of(entry["file"])
        out = run(anonymous, "load", f"gs://{BUCKET}/tensorizer/{entry['file']}", "--json", "--sha256", "--verify",
                  *key_args(manifest, secrets_dir))
        check(f"gcs anonymous {entry['file']}", loaded(out) == expected(manifest), out.stderr)
    out = run(clean_env(empty_home, STORAGE_EMULATOR_HOST=proxy.url), "load", large_uri)
    check("gcs anonymous refused", out.returncode != 0 and "401" in out.stderr and "none found, anonymous" in
          out.stderr and one_line(out.stderr), out.stderr)

    # Range reads through faults: a reset, a 503, a cut, each retried.
    with FaultProxy(gcs.port) as faults:
        faults.schedule(["reset:1000", "503", "cut:300000"])
        out = run(clean_env(empty_home, STORAGE_EMULATOR_HOST=faults.url), "load", large_uri, "--json", "--sha256",
                  "--verify", "--connections", "2", "--range-size", str(MIB))
        check("gcs range reads retried through faults", loaded(out) == expected(large) and faults.connections > 3,
              out.stderr)

    # Every fixture written to gs:// (decrypted where it is encrypted) holds what a local convert
    # writes, byte for byte, and loads back as its manifest says.
    for entry in index["files"]:
        manifest = manifest_of(entry["file"])
        decrypt = [arg.replace("--", "--decrypt-", 1) if arg.startswith("--") else arg
                   for arg in key_args(manifest, secrets_dir)]
        local = os.path.join(tmp, "written-" + entry["file"])
        subprocess.run([RINGLOAD, "convert", fixture(entry["file"]), local, *decrypt], check=True, capture_output=True)
        written = f"gs://{BUCKET}/written/{entry['file']}"
        out = run(with_key, "convert", fixture(entry["file"]), written, *decrypt)
        same = out.returncode == 0 and gcs.download(BUCKET, "written/" + entry["file"]) == open(local, "rb").read()
        back = run(with_key, "load", written, "--json", "--sha256", "--verify")
        check(f"gcs writes {entry['file']}", same and loaded(back) == expected(manifest), out.stderr + back.stderr)

    # Uploads: convert writes to gs:// what it writes locally.
    local_small = os.path.join(tmp, "small.tensors")
    subprocess.run([RINGLOAD, "convert", fixture("basic_v1.tensors"), local_small], check=True, capture_output=True)
    tokens.scopes.clear()
    out = run(with_key, "convert", fixture("basic_v1.tensors"), f"gs://{BUCKET}/out/small.tensors")
    check("gcs convert small exit", out.returncode == 0, out.stderr)
    body = gcs.download(BUCKET, "out/small.tensors")
    check("gcs convert small bytes", body == open(local_small, "rb").read(), f"{len(body or b'')} bytes")
    check("gcs uploads asked for read_write", tokens.scopes == [READ_WRITE], tokens.scopes)

    local_large = os.path.join(tmp, "large.tensors")
    subprocess.run([RINGLOAD, "convert", fixture("large_mixed_v2.tensors"), local_large], check=True,
                   capture_output=True)
    chunks = -(-os.path.getsize(local_large) // MIB)
    proxy.requests.clear()
    big_uri = f"gs://{BUCKET}/out/dir/big.tensors"
    out = run(with_key, "convert", fixture("large_mixed_v2.tensors"), big_uri, "--range-size", str(MIB))
    check("gcs convert in chunks exit", out.returncode == 0, out.stderr)
    body = gcs.download(BUCKET, "out/dir/big.tensors")
    check("gcs convert in chunks bytes", body == open(local_large, "rb").read(), f"{len(body or b'')} bytes")
    puts = [r for r in proxy.requests if r[0] == "PUT"]
    check("gcs convert chunk count", len(puts) == chunks and chunks >= 8 and puts[0][3] == f"bytes 0-{MIB - 1}/*" and
          puts[-1][3].endswith(f"/{os.path.getsize(local_large)}"), [r[3] for r in puts])
    out = run(with_key, "load", big_uri, "--json", "--sha256", "--verify")
    check("gcs uploaded object loads", loaded(out) == expected(large), out.stderr)

    # The second chunk refused once: a status query, then the rest.
    refused = []

    def once(method, path, headers):
        if method == "PUT" and headers.get("Content-Range", "").startswith(f"bytes {MIB}-") and not refused:
            refused.append(path)
            return True
        return False

    with GcsProxy(gcs, tokens, fail=once) as flaky:
        out = run(clean_env(empty_home, STORAGE_EMULATOR_HOST=flaky.url, GOOGLE_APPLICATION_CREDENTIALS=key_file),
                  "convert", fixture("large_mixed_v2.tensors"), f"gs://{BUCKET}/out/resumed.tensors",
                  "--range-size", str(MIB))
        check("gcs upload resumed after a 503", out.returncode == 0 and refused and flaky.status_queries == 1,
              out.stderr)
        body = gcs.download(BUCKET, "out/resumed.tensors")
        check("gcs resumed upload bytes", body == open(local_large, "rb").read(), f"{len(body or b'')} bytes")

    # The second chunk always refused: the upload fails, is cancelled, and leaves no object.
    def always(method, path, headers):
        return method == "PUT" and headers.get("Content-Range", "").startswith(f"bytes {MIB}-")

    with GcsProxy(gcs, tokens, fail=always) as failing:
        failed_uri = f"gs://{BUCKET}/out/failed.tensors"
        out = run(clean_env(empty_home, STORAGE_EMULATOR_HOST=failing.url, GOOGLE_APPLICATION_CREDENTIALS=key_file),
                  "convert", fixture("large_mixed_v2.tensors"), failed_uri, "--range-size", str(MIB), "--attempts", "2")
        check("gcs failed upload exit", out.returncode != 0 and "503" in out.stderr and "cancelled" in out.stderr and
              failed_uri in out.stderr and one_line(out.stderr) and no_secret(out, tokens, key_file), out.stderr)
        check("gcs failed upload cancelled", any(r[0] == "DELETE" for r in failing.requests), failing.requests[-3:])
    check("gcs failed upload leaves no object", "out/failed.tensors" not in gcs.names(BUCKET), gcs.names(BUCKET))

    out = run(with_key, "convert", fixture("basic_v1.tensors"), "gs://no-such-bucket/x.tensors")
    check("gcs upload to a missing bucket", out.returncode != 0 and "gs://no-such-bucket/x.tensors" in out.stderr and
          one_line(out.stderr), out.stderr)

sys.exit(checks.finish())
