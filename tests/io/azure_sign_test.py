#!/usr/bin/env python3
"""tests/io/azure_sign_test.py SIGN_TOOL

Our Azure Shared Key signing (azure_request_headers, through tests/io/azure_sign_tool.cpp) against
azure-storage-blob's own SharedKeyCredentialPolicy on the same requests: GETs of blobs whose names
need percent-encoding (space, +, =, &, %, unicode, ~, repeated and trailing slashes, quotes),
ranged with Range (the header the source sends) and with x-ms-range (the SDK's own way), query
parameters (snapshot, versionid, comp with several parameters), a PUT with Content-Type and
Content-Length, a zero Content-Length, extra x-ms-* headers, the account's own host and
path-style emulator URLs (http://127.0.0.1:10000/ACCOUNT/...). The Authorization headers and
x-ms-date must be identical, and our blob URLs (azure_blob_url) must be the SDK's BlobClient.url.

The SDK names the Range line of the string-to-sign 'byte_range', a header it never sends (it
sends x-ms-range), so its line is always empty; the service fills it from the Range header. For
requests that carry Range, the SDK's policy is run with that one line read from Range
(ServiceSharedKeyPolicy, also what tests/support/azure_server.py verifies with); every other
part of the string-to-sign and the HMAC are the SDK's. Exits 77 (skipped, with the reason) where
azure-storage-blob is not importable.
"""
import json
import os
import subprocess
import sys
from urllib.parse import quote

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

try:
    from azure_shared_key import ServiceSharedKeyPolicy, sdk_authorization  # noqa: E402
except ImportError as error:
    print(f"SKIP: azure-storage-blob is not importable ({error}); scripts/setup.sh installs it in .venv")
    sys.exit(77)
from azure.storage.blob import BlobClient  # noqa: E402
from azure.storage.blob._shared.authentication import SharedKeyCredentialPolicy  # noqa: E402

TOOL = sys.argv[1]
checks = Checks()
EPOCH = 1369353600 + 3 * 86400 + 3723  # Mon, 27 May 2013 01:02:03 GMT
ACCOUNT = "ringloadtest"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
OTHER_KEY = "c2VjcmV0LWtleS1mb3ItdGVzdHMtb25seS0wMTIzNDU2Nzg5YWJjZGVm"


def blob_url(endpoint, container, blob, query=""):
    url = f"{endpoint}/{quote(container)}/{quote(blob, safe='~/')}"
    return url + ("?" + query if query else "")


def run_tool(lines):
    out = subprocess.run([TOOL], input="\n".join(json.dumps(line) for line in lines) + "\n", capture_output=True,
                         text=True, timeout=60)
    checks.check("sign tool exit", out.returncode == 0, out.stderr)
    return [json.loads(line) for line in out.stdout.splitlines()]


names = ["model.tensors", "dir/sub dir/a+b=c&d.tensors", "100%/x", "ünïcödé/模型.tensors", "a~b_c-d.e",
         "double//slash/", "./dot/../segments", "quote'\"<>#[]{}|\\^`!$()*,;:@.tensors"]
endpoints = [f"https://{ACCOUNT}.blob.core.windows.net", f"http://127.0.0.1:10000/{ACCOUNT}",
             f"http://localhost:10000/{ACCOUNT}"]
cases = []
for index, name in enumerate(names):
    endpoint = endpoints[index % len(endpoints)]
    cases.append({"method": "GET", "url": blob_url(endpoint, "models", name),
                  "headers": [["Range", f"bytes={index}-{index + 8388607}"]]})
    cases.append({"method": "GET", "url": blob_url(endpoint, "models", name),
                  "headers": [["x-ms-range", f"bytes={index}-{index + 1048575}"]]})
cases.append({"method": "GET", "url": blob_url(endpoints[1], "models", names[1]), "headers": []})
snapshot = "snapshot=2026-11-28T03%3A00%3A00.1234567Z"
cases.append({"method": "GET", "url": blob_url(endpoints[0], "models", names[0], snapshot),
              "headers": [["Range", "bytes=0-0"]]})
cases.append({"method": "GET", "url": blob_url(endpoints[1], "models", names[3], "versionid=2026-11-28T03%3A00%3A00Z"),
              "headers": [["Range", "bytes=0-0"]], "key": OTHER_KEY})
cases.append({"method": "GET", "url": f"{endpoints[0]}/models?restype=container&comp=list&prefix=dir%2F&maxresults=10",
              "headers": []})
cases.append({"method": "HEAD", "url": blob_url(endpoints[2], "$root", names[0]), "headers": []})
cases.append({"method": "PUT", "url": blob_url(endpoints[1], "models", names[1]),
              "headers": [["Content-Type", "application/octet-stream"], ["Content-Length", "1048576"],
                          ["x-ms-blob-type", "BlockBlob"], ["x-ms-meta-source", "ringload"]]})
cases.append({"method": "PUT", "url": blob_url(endpoints[0], "models", names[2], "comp=block&blockid=QUFBQQ%3D%3D"),
              "headers": [["Content-Length", "0"], ["x-ms-client-request-id", "4d9c3e1c-0000-0000-0000-000000000000"]]})
for case in cases:
    case.update({"account": ACCOUNT, "epoch": EPOCH})
    case.setdefault("key", KEY)

answers = run_tool(cases)
checks.check("one answer per case", len(answers) == len(cases), f"{len(answers)} answers for {len(cases)} cases")
for case, answer in zip(cases, answers):
    ours = dict((name.lower(), value) for name, value in answer["headers"])
    headers = dict(case["headers"])
    headers.update({"x-ms-date": ours.get("x-ms-date", ""), "x-ms-version": ours.get("x-ms-version", "")})
    ranged = any(name.lower() == "range" for name in headers)
    policy = (ServiceSharedKeyPolicy if ranged else SharedKeyCredentialPolicy)(ACCOUNT, case["key"])
    theirs, their_string = sdk_authorization(policy, case["method"], case["url"], headers)
    label = f"{case['method']} {case['url']} {case['headers']}"
    checks.check(label + " Authorization", ours.get("authorization") == theirs,
                 f"\n ours {ours.get('authorization')}\n sdk  {theirs}\n ours {answer['string_to_sign']!r}"
                 f"\n sdk  {their_string!r}")
    checks.check(label + " x-ms-date", ours.get("x-ms-date") == "Mon, 27 May 2013 01:02:03 GMT", ours.get("x-ms-date"))
    checks.check(label + " key not in headers", all(case["key"] not in value for value in ours.values()))

# Without a key: x-ms-version alone, nothing signed.
anonymous = run_tool([dict(cases[0], key="")])
checks.check("anonymous: x-ms-version alone", anonymous and [n for n, _ in anonymous[0]["headers"]] == ["x-ms-version"],
             anonymous)

# Blob URLs: ours (az:// URI + endpoint) against BlobClient's for the same names.
url_cases = [{"uri": f"az://{ACCOUNT}/models/{name}", "endpoint": endpoint} for name in names for endpoint in endpoints]
for case, answer in zip(url_cases, run_tool(url_cases)):
    name = case["uri"].split("/", 4)[4]
    sdk_url = BlobClient(case["endpoint"], "models", name).url
    checks.check(f"url of {name!r} at {case['endpoint']}", answer["url"] == sdk_url, f"{answer['url']} != {sdk_url}")
# The default endpoint of an az:// URI is the account's own host.
default = run_tool([{"uri": f"az://{ACCOUNT}/models/{names[1]}"}])
checks.check("default endpoint", default and default[0]["url"] == blob_url(endpoints[0], "models", names[1]), default)

sys.exit(checks.finish())
