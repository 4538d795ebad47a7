#!/usr/bin/env python3
"""tests/bindings/azure_test.py RINGLOAD DATA_DIR

`ringload` with az:// URIs and Azure blob URLs against tests/support/azure_server.py, an Azure
Blob Storage stand-in started here on 127.0.0.1 (path-style, as Azurite serves), which checks
every request's Shared Key signature and every SAS with azure-storage-blob's own code:
  - every tensorizer fixture loads (hashes verified, keys given for the encrypted ones) with its
    manifest's names, dtypes, shapes and sha256, signed with Shared Key (the account key and the
    endpoint from AZURE_STORAGE_CONNECTION_STRING), and again with a container SAS from the
    connection string's SharedAccessSignature; `info` works too;
  - over TLS (the endpoint https://, the server's certificate trusted with --ca-file); with one
    connection and 1 MiB ranges (every range request signed and checked); a blob name that needs
    percent-encoding (space, +, =, &, ~, unicode);
  - credentials from each other place: --azure-account-key, --azure-sas (a blob SAS),
    AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY (azure-cli's names), an
    account SAS, a SAS URL's own query; the endpoint from --azure-endpoint for an
    https://ACCOUNT.blob.core.windows.net URL;
  - a wrong key fails with one line naming the az:// URI, Azure's AuthenticationFailed and where
    the key came from, and neither key nor signature; a SAS for another blob, a tampered one and
    an expired one are refused without printing it; a missing blob is "not found"
    (BlobNotFound), a missing container ContainerNotFound;
  - anonymous reads: a public container's blob loads with no credentials anywhere, a private
    one is refused (ResourceNotFound) and the message says the read was anonymous.
Exits 77 (skipped, with the reason) where azure-storage-blob is not installed.
"""
import base64
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

try:
    from azure_server import AzureServer  # noqa: E402
except ImportError as error:
    print(f"SKIP: azure-storage-blob is not importable ({error}); scripts/setup.sh installs it in .venv")
    sys.exit(77)

RINGLOAD, DATA = sys.argv[1:3]
checks = Checks()
check = checks.check
ACCOUNT = "ringloadtest"
KEY = base64.b64encode(bytes(range(64))).decode()
WRONG_KEY = base64.b64encode(bytes(range(1, 65))).decode()
ODD_NAME = "dir with space/a+b=c&d~e ünï.tensors"


CLI = CliRuns(RINGLOAD, DATA)
run, manifest_of = CLI.run, CLI.manifest_of


def clean_env(home, **extra):
    """The process's environment without any Azure setting, HOME set to `home`, plus `extra`."""
    return cli_runs.clean_env(home, ("AZURE_",), **extra)



def no_secret(out, *secrets):
    return all(secret not in out.stderr and secret not in out.stdout for secret in secrets)


def sig_of(sas):
    return dict(part.split("=", 1) for part in sas.split("&"))["sig"]


def load_every_fixture(label, env, *args):
    for entry in index["files"]:
        manifest = manifest_of(entry["file"])
        uri = f"az://{ACCOUNT}/models/tensorizer/{entry['file']}"
        out = run(env, "load", uri, "--json", "--sha256", "--verify", *args, *key_args(manifest, secrets))
        check(f"{label} {entry['file']} exit", out.returncode == 0, out.stderr)
        check(f"{label} {entry['file']} values", loaded(out) == expected(manifest))
        info = run(env, "info", uri, "--json", *args)
        check(f"{label} info {entry['file']}", info.returncode == 0 and
              json.loads(info.stdout)["data_version"] == manifest["data_version"], info.stderr)


index = json.load(open(os.path.join(DATA, "tensorizer", "index.json")))
large = manifest_of("large_mixed_v2.tensors")
large_path = os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors")
basic_path = os.path.join(DATA, "tensorizer", "basic_v1.tensors")
large_uri = f"az://{ACCOUNT}/models/tensorizer/large_mixed_v2.tensors"

with AzureServer(ACCOUNT, KEY) as azure, tempfile.TemporaryDirectory() as tmp:
    home = os.path.join(tmp, "home")
    os.makedirs(home)
    secrets = os.path.join(tmp, "secrets")
    os.makedirs(secrets)
    azure.create_container("models")
    azure.create_container("public", public=True)
    for entry in index["files"]:
        azure.put("models", "tensorizer/" + entry["file"], os.path.join(DATA, "tensorizer", entry["file"]))
    azure.put("models", ODD_NAME, large_path)
    azure.put("public", "basic_v1.tensors", basic_path)
    azure.put("public", ODD_NAME, large_path)
    with_key = clean_env(home, AZURE_STORAGE_CONNECTION_STRING=azure.connection_string(key=KEY))
    container_sas = azure.container_sas("models")
    with_sas = clean_env(home, AZURE_STORAGE_CONNECTION_STRING=azure.connection_string(sas=container_sas))
    endpoint_only = clean_env(home, AZURE_STORAGE_CONNECTION_STRING=azure.connection_string())

    # Every fixture, with Shared Key and with a SAS.
    load_every_fixture("shared key", with_key)
    check("shared key: every request signed and checked", azure.requests and
          all(r["auth"] == "shared_key" and r["status"] in (200, 206) for r in azure.requests),
          [r for r in azure.requests if r["auth"] != "shared_key" or r["status"] not in (200, 206)][:3])
    load_every_fixture("sas", with_sas)

    # One connection, 1 MiB ranges: each range request is signed with its own Range.
    before = len(azure.requests)
    out = run(with_key, "load", large_uri, "--json", "--sha256", "--verify", "--connections", "1",
              "--range-size", "1048576")
    check("1 connection, 1 MiB ranges", loaded(out) == expected(large), out.stderr)
    ranged = azure.requests[before:]
    check("1 MiB ranges: each signed request served", len(ranged) > 8 and
          all(r["auth"] == "shared_key" and r["status"] == 206 and r["range"] for r in ranged), ranged[:3])

    # A blob name that needs percent-encoding, signed (the server checks the encoded path).
    out = run(with_key, "load", f"az://{ACCOUNT}/models/{ODD_NAME}", "--json", "--sha256", "--verify")
    check("name that needs encoding, shared key", loaded(out) == expected(large), out.stderr)
    out = run(endpoint_only, "load", f"az://{ACCOUNT}/models/{ODD_NAME}", "--json", "--sha256",
              "--azure-sas", azure.blob_sas("models", ODD_NAME))
    check("name that needs encoding, blob SAS (--azure-sas)", loaded(out) == expected(large), out.stderr)

    # Credentials from each other place.
    out = run(endpoint_only, "load", large_uri, "--json", "--sha256", "--azure-account-key", KEY)
    check("--azure-account-key", loaded(out) == expected(large), out.stderr)
    out = run(clean_env(home, AZURE_STORAGE_CONNECTION_STRING=azure.connection_string(),
                        AZURE_STORAGE_SAS_TOKEN="?" + azure.blob_sas("models", "tensorizer/large_mixed_v2.tensors")),
              "load", large_uri, "--json", "--sha256")
    check("AZURE_STORAGE_SAS_TOKEN (blob SAS, with its '?')", loaded(out) == expected(large), out.stderr)
    out = run(clean_env(home, AZURE_STORAGE_ACCOUNT=ACCOUNT, AZURE_STORAGE_KEY=KEY), "load", large_uri,
              "--azure-endpoint", azure.endpoint, "--json", "--sha256")
    check("AZURE_STORAGE_ACCOUNT + AZURE_STORAGE_KEY", loaded(out) == expected(large), out.stderr)
    out = run(endpoint_only, "load", large_uri, "--json", "--sha256", "--azure-sas", azure.account_sas())
    check("account SAS", loaded(out) == expected(large), out.stderr)
    out = run(clean_env(home, AZURE_STORAGE_CONNECTION_STRING=azure.connection_string(key=WRONG_KEY)), "load",
              large_uri, "--json", "--sha256", "--azure-sas", container_sas)
    check("--azure-sas before the connection string's key", loaded(out) == expected(large), out.stderr)

    # The https://ACCOUNT.blob.core.windows.net form, sent to this server by --azure-endpoint:
    # with Shared Key, and as a SAS URL (its own query the credentials).
    blob_url = f"https://{ACCOUNT}.blob.core.windows.net/models/tensorizer/large_mixed_v2.tensors"
    out = run(with_key, "load", blob_url, "--azure-endpoint", azure.endpoint, "--azure-account-key", KEY, "--json",
              "--sha256")
    check("https://ACCOUNT.blob.core.windows.net URL", loaded(out) == expected(large), out.stderr)
    sas_url = blob_url + "?" + azure.blob_sas("models", "tensorizer/large_mixed_v2.tensors")
    out = run(clean_env(home), "load", sas_url, "--azure-endpoint", azure.endpoint, "--json", "--sha256")
    check("SAS URL", loaded(out) == expected(large), out.stderr)

    # A wrong key: Azure's reason, the URI, where the key came from; neither key nor signature.
    before = len(azure.requests)
    wrong = clean_env(home, AZURE_STORAGE_CONNECTION_STRING=azure.connection_string(key=WRONG_KEY))
    out = run(wrong, "load", large_uri)
    check("wrong key refused", out.returncode != 0 and "403" in out.stderr and "AuthenticationFailed" in out.stderr
          and large_uri in out.stderr and "AZURE_STORAGE_CONNECTION_STRING" in out.stderr and one_line(out.stderr),
          out.stderr)
    check("wrong key: no key, no signature printed", no_secret(out, WRONG_KEY, KEY) and "SharedKey" not in out.stderr
          and "MAC signature" not in out.stderr, out.stderr)
    check("wrong key: refused by the server's check", [r["status"] for r in azure.requests[before:]] == [403],
          azure.requests[before:])

    # SAS refusals: for another blob, tampered, expired.
    other_blob = azure.blob_sas("models", "tensorizer/basic_v1.tensors")
    tampered = container_sas.replace("sp=rl", "sp=rwl")
    check("the tampered SAS differs", tampered != container_sas, container_sas)
    expired = azure.container_sas("models", hours=-1)
    for label, sas in (("SAS for another blob", other_blob), ("tampered SAS", tampered), ("expired SAS", expired)):
        out = run(endpoint_only, "load", large_uri, "--azure-sas", sas)
        check(label + " refused", out.returncode != 0 and "403" in out.stderr and "AuthenticationFailed" in out.stderr
              and large_uri in out.stderr and "option azure_sas" in out.stderr and one_line(out.stderr), out.stderr)
        check(label + ": signature not printed", no_secret(out, sig_of(sas)) and "sig=" not in out.stderr, out.stderr)

    # Missing blob, missing container.
    missing = f"az://{ACCOUNT}/models/tensorizer/missing.tensors"
    out = run(with_key, "load", missing)
    check("missing blob", out.returncode != 0 and "not found" in out.stderr and "BlobNotFound" in out.stderr and
          missing in out.stderr and one_line(out.stderr), out.stderr)
    out = run(with_key, "load", f"az://{ACCOUNT}/nosuch/x.tensors")
    check("missing container", out.returncode != 0 and "ContainerNotFound" in out.stderr and one_line(out.stderr),
          out.stderr)

    # Anonymous: no credentials anywhere (the connection string gives only the endpoint).
    out = run(endpoint_only, "load", f"az://{ACCOUNT}/public/basic_v1.tensors", "--json", "--sha256", "--verify")
    check("anonymous public", loaded(out) == expected(manifest_of("basic_v1.tensors")), out.stderr)
    out = run(endpoint_only, "load", f"az://{ACCOUNT}/public/{ODD_NAME}", "--json", "--sha256")
    check("anonymous public, name that needs encoding", loaded(out) == expected(large), out.stderr)
    out = run(with_key, "load", f"az://{ACCOUNT}/public/basic_v1.tensors", "--azure-anonymous", "--json", "--sha256")
    check("--azure-anonymous over a key", loaded(out) == expected(manifest_of("basic_v1.tensors")) and
          azure.requests[-1]["auth"] == "anonymous", out.stderr)
    out = run(endpoint_only, "load", large_uri)
    check("anonymous private refused", out.returncode != 0 and "ResourceNotFound" in out.stderr and
          "anonymous" in out.stderr and one_line(out.stderr), out.stderr)

with AzureServer(ACCOUNT, KEY, tls=True) as azure, tempfile.TemporaryDirectory() as tmp:
    azure.create_container("models")
    azure.put("models", "tensorizer/large_mixed_v2.tensors", large_path)
    with_key = clean_env(tmp, AZURE_STORAGE_CONNECTION_STRING=azure.connection_string(key=KEY))
    out = run(with_key, "load", large_uri, "--json", "--sha256", "--verify", "--ca-file", azure.tls_cert)
    check("https endpoint, shared key", loaded(out) == expected(large), out.stderr)
    out = run(with_key, "load", large_uri)
    check("https endpoint, untrusted certificate refused", out.returncode != 0 and one_line(out.stderr), out.stderr)

sys.exit(checks.finish())
