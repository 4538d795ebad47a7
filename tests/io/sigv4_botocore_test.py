#!/usr/bin/env python3
"""tests/io/sigv4_botocore_test.py SIGN_TOOL

Our SigV4 signing of S3 requests (s3_request_headers, through tests/io/s3_sign_tool.cpp) against
botocore's S3SigV4Auth on the same requests: GETs with a Range, keys with characters that need
percent-encoding (space, +, =, &, %, unicode, ~, repeated and trailing slashes), query strings
(multipart's uploadId/partNumber, unsorted and repeated-looking parameters), a session token,
payload hashes of PUT bodies, another region, an endpoint with a port and a virtual-hosted one.
The Authorization headers (and x-amz-* headers) must be identical. Exits 77 (skipped, with the
reason) where botocore is not importable.
"""
import datetime
import hashlib
import json
import os
import subprocess
import sys
from unittest import mock
from urllib.parse import quote

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

try:
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials
except ImportError as error:
    print(f"SKIP: botocore is not importable ({error}); scripts/setup.sh installs it in .venv")
    sys.exit(77)

TOOL = sys.argv[1]
checks = Checks()
EPOCH = 1369353600 + 3 * 86400 + 3723  # 2013-05-27T01:02:03Z


def botocore_headers(case):
    credentials = Credentials(case["access_key"], case["secret_key"], case.get("token") or None)
    request = AWSRequest(method=case["method"], url=case["url"], data=case.get("body", b""),
                         headers=dict(case["headers"]))
    fixed = datetime.datetime.utcfromtimestamp(case["epoch"])
    with mock.patch("botocore.auth.datetime") as clock:
        clock.datetime.utcnow.return_value = fixed
        clock.datetime.strptime = datetime.datetime.strptime
        S3SigV4Auth(credentials, "s3", case["region"]).add_auth(request)
    return {name.lower(): value for name, value in request.headers.items()}


def object_url(endpoint, bucket, key, query=""):
    url = f"{endpoint}/{quote(bucket, safe='')}/{quote(key, safe='/~')}"
    return url + ("?" + query if query else "")


keys = ["model.tensors", "dir/sub dir/a+b=c&d.tensors", "100%/x", "ünïcödé/模型.tensors", "a~b_c-d.e",
        "double//slash/", "./dot/../segments", "quote'\"<>#[]{}|\\^`!$()*,;:@.tensors"]
cases = []
for index, key in enumerate(keys):
    cases.append({"method": "GET", "url": object_url("http://127.0.0.1:9000", "models", key),
                  "headers": [["Range", f"bytes={index}-{index + 1048575}"]]})
cases.append({"method": "GET", "url": object_url("https://s3.eu-west-3.amazonaws.com", "models", keys[1]),
              "headers": [["Range", "bytes=0-0"]], "region": "eu-west-3"})
cases.append({"method": "GET", "url": "https://models.s3.us-east-1.amazonaws.com/" + quote(keys[1], safe="/~"),
              "headers": [["Range", "bytes=0-8388607"]]})
cases.append({"method": "GET", "url": object_url("http://127.0.0.1:9000", "models", keys[0]),
              "headers": [], "token": "FQoGZXIvYXdzE+Session/Token=="})
cases.append({"method": "POST", "url": object_url("http://localhost:9000", "models", keys[1], "uploads="),
              "headers": [["Content-Type", "application/octet-stream"]]})
for part in (1, 2, 10):
    body = bytes(range(256)) * (part * 7)
    cases.append({"method": "PUT", "body": body,
                  "url": object_url("http://127.0.0.1:9000", "models", keys[1],
                                    f"partNumber={part}&uploadId={quote('2~Ab+c/D=e', safe='-_.~')}"),
                  "headers": []})
cases.append({"method": "DELETE", "url": object_url("http://127.0.0.1:9000", "models", keys[0],
                                                    "uploadId=zzz&a=1&A=2&b=%20"), "headers": []})
cases.append({"method": "GET", "url": "http://127.0.0.1:9000/models?list-type=2&prefix=dir%2F&max-keys=10",
              "headers": [["x-amz-meta-note", "  spaced   value  "]]})

lines = []
for case in cases:
    case.setdefault("region", "us-east-1")
    case.update({"access_key": "AKIAIOSFODNN7EXAMPLE", "secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                 "epoch": EPOCH})
    case.setdefault("token", "")
    case["payload_sha256"] = hashlib.sha256(case.get("body", b"")).hexdigest()
    lines.append(json.dumps({k: v for k, v in case.items() if k != "body"}))
out = subprocess.run([TOOL], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60)
checks.check("sign tool exit", out.returncode == 0, out.stderr)
ours_all = [dict((n.lower(), v) for n, v in json.loads(line)["headers"]) for line in out.stdout.splitlines()]
checks.check("one answer per case", len(ours_all) == len(cases), f"{len(ours_all)} answers for {len(cases)} cases")

for case, ours in zip(cases, ours_all):
    theirs = botocore_headers(case)
    label = f"{case['method']} {case['url']}"
    checks.check(label + " Authorization", ours.get("authorization") == theirs.get("authorization"),
                 f"\n ours     {ours.get('authorization')}\n botocore {theirs.get('authorization')}")
    for name in ("x-amz-date", "x-amz-content-sha256", "x-amz-security-token"):
        checks.check(f"{label} {name}", ours.get(name) == theirs.get(name), f"{ours.get(name)} != {theirs.get(name)}")
    checks.check(label + " secret not in headers",
                 all(case["secret_key"] not in value for value in ours.values()))

sys.exit(checks.finish())
