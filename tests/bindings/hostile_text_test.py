#!/usr/bin/env python3
"""tests/bindings/hostile_text_test.py RINGLOAD DATA_DIR [PYTHONPATH]: untrusted text stays inert (issue #27, part 5).

Tensor names with terminal escape sequences (colour, OSC window title with BEL), a bidi
override, DEL and C1 controls (U+0080..U+009F, CSI among them), a 5,000-byte name and bytes
that are not UTF-8, in all three formats (safetensors written here, with hostile metadata too,
tensorizer and torch made from it by `ringload convert`, invalid UTF-8 patched into a tensorizer
fixture): `ringload info` and `load --sha256` print them as visible escapes (no control byte but
the newline reaches the terminal, the output is valid UTF-8, the long name is cut with a note),
`info --json` and `load --json` stay valid JSON with the names and metadata as they are and DEL
and C1 controls as \\u escapes (JSON needs escapes only below U+0020; the others would reach a
terminal raw), and an error that quotes a hostile name is inert too. A presigned URL's signature
and credential never appear in an error, from the CLI or (with PYTHONPATH given) from the Python
package.
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

RINGLOAD, DATA = sys.argv[1], sys.argv[2]
checks = Checks()
check = checks.check
HOSTILE = ["\x1b[31mred\x1b[0m", "\x1b]0;pwned\x07title", "\u202eevil.weight", "ok.weight", "x" * 5000,
           "\u6a21\u578b.weight", "del\x7fname", "\u009b31mcsi", "c1\u0080\u0085\u009f"]
METADATA = {"\x7fkey\u009b2J": "value\u0090\x7f\u0085 \u6a21", "plain": "text"}


def run(*args):
    return subprocess.run([RINGLOAD, *args], capture_output=True, timeout=120)


def inert(name, raw: bytes):
    """Printed bytes a terminal cannot act on: valid UTF-8, no control but newline, no bidi override."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        check(f"{name}: valid UTF-8", False, repr(error))
        return ""
    bad = [c for c in text if (ord(c) < 0x20 and c != "\n") or 0x7f <= ord(c) <= 0x9f or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"]
    check(f"{name}: no control characters", not bad, repr(bad[:5]))
    return text


def json_escapes_del_and_c1(name, raw: bytes):
    """JSON output carries DEL and the C1 controls as \\u escapes, never as their bytes (0x7f; UTF-8
    0xc2 0x80..0xc2 0x9f)."""
    found = re.findall(rb"\x7f|\xc2[\x80-\x9f]", raw)
    check(f"{name}: DEL and C1 controls escaped", not found, repr(found[:5]))


def safetensors_file(path, names):
    header, offset = {"__metadata__": METADATA}, 0
    for name in names:
        header[name] = {"dtype": "F32", "shape": [2], "data_offsets": [offset, offset + 8]}
        offset += 8
    encoded = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)) + encoded + bytes(range(offset)))


with tempfile.TemporaryDirectory() as tmp:
    files = {"safetensors": os.path.join(tmp, "hostile.safetensors")}
    safetensors_file(files["safetensors"], HOSTILE)
    for fmt, extension in (("tensorizer", ".tensors"), ("torch", ".pt")):
        files[fmt] = os.path.join(tmp, "hostile" + extension)
        out = run("convert", files["safetensors"], files[fmt])
        check(f"convert to {fmt}", out.returncode == 0, out.stderr.decode(errors="replace"))
    for fmt, path in files.items():
        out = run("info", path)
        text = inert(f"{fmt} info", out.stdout)
        check(f"{fmt} info: escapes shown", "\\u{1b}[31mred" in text and "\\u{7}title" in text
              and "\\u{202e}evil" in text and "\u6a21\u578b.weight" in text, text[:400])
        check(f"{fmt} info: the long name is cut with a note", "x" * 200 + "...(4800 more bytes)" in text
              and "x" * 201 not in text, "")
        for command in ("info", "load"):
            out = run(command, path, "--json")
            json_escapes_del_and_c1(f"{fmt} {command} --json", out.stdout)
            try:
                parsed = json.loads(out.stdout)
                names = sorted(t["name"] if fmt != "torch" else ".".join(map(str, t["path"]))
                               for t in parsed["tensors"])
                check(f"{fmt} {command} --json: the names as they are", names == sorted(HOSTILE), names[:3])
                if command == "info" and fmt == "safetensors":
                    check(f"{fmt} info --json: the metadata as it is", parsed["metadata"] == METADATA,
                          parsed.get("metadata"))
            except (ValueError, KeyError) as error:
                check(f"{fmt} {command} --json is JSON", False, repr(error))
        out = run("load", path, "--sha256")
        check(f"{fmt} load --sha256", out.returncode == 0, out.stderr[-300:])
        inert(f"{fmt} load --sha256", out.stdout)

    # Bytes that are not UTF-8 in a tensorizer name ('a' of tiny_v1 patched to 0xff 0xfe is too
    # long: one byte for one), and an error quoting it (the hashes no longer match the header).
    raw = bytearray(open(os.path.join(DATA, "tensorizer", "tiny_v1.tensors"), "rb").read())
    places = [k for k in range(len(raw) - 3) if raw[k:k + 3] == b"\x01\x00a"]
    for k in places:
        raw[k + 2] = 0xff
    patched = os.path.join(tmp, "not_utf8.tensors")
    with open(patched, "wb") as f:
        f.write(raw)
    out = run("info", patched)
    check("not UTF-8: shown as \\xff", "\\xff" in inert("not UTF-8 info", out.stdout), out.stdout[:200])
    out = run("info", patched, "--json")
    try:
        json.loads(out.stdout)
        check("not UTF-8: info --json is JSON", True)
    except ValueError as error:
        check("not UTF-8: info --json is JSON", False, repr(error))
    out = run("load", patched, "--verify")
    err = inert("an error quoting a hostile name", out.stderr)
    check("the error names the tensor as an escape", out.returncode != 0 and "tensor '\\xff'" in err, err)

    # Hostile text in a message that does not come from a name: a server's reason phrase is
    # covered by the same path (Error::message); here a torch zip whose data.pkl names a
    # hostile global, refused by the allowlist.
    escape_global = os.path.join(tmp, "escape_global.pt")
    with zipfile.ZipFile(escape_global, "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02c\x1b[2Jos\nsystem\n)R.")
        archive.writestr("archive/version", b"3\n")
    out = run("info", escape_global)
    err = inert("a refused pickle global", out.stderr)
    check("the refused global is named with escapes", out.returncode != 0 and "\\u{1b}[2J" in err, err)

    # A presigned URL: the signature and the credential stay out of every message.
    url = ("http://127.0.0.1:9/m.safetensors?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIASECRETCRED"
           "%2F20261127&X-Amz-Signature=0123456789abcdefSIGNATURE&X-Amz-Expires=600")
    out = run("info", url)
    err = out.stderr.decode()
    check("presigned URL: an error", out.returncode != 0 and "127.0.0.1:9" in err, err)
    check("presigned URL: no signature or credential in the error",
          "SIGNATURE" not in err and "AKIASECRETCRED" not in err and "X-Amz-Signature=REDACTED" in err, err)
    if len(sys.argv) > 3:
        probe = ("import ringload\ntry:\n    ringload.load_file(" + repr(url) + ", timeout=2, attempts=1)\n"
                 "except Exception as error:\n    print(type(error).__name__, error)\n")
        env = dict(os.environ, PYTHONPATH=sys.argv[3])
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
        check("presigned URL from Python: an error", "127.0.0.1:9" in out.stdout, out.stdout + out.stderr)
        check("presigned URL from Python: no signature or credential",
              "SIGNATURE" not in out.stdout and "AKIASECRETCRED" not in out.stdout, out.stdout)

sys.exit(checks.finish())
