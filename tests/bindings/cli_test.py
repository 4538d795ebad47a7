#!/usr/bin/env python3
"""tests/bindings/cli_test.py: the `ringload` command against the fixture manifests.

Runs the real binary (path in argv[1]) on every tensorizer fixture and checks `load --json
--sha256` and `info --json` against the manifests, the exit status and the one-line errors
of bad files, and --filter. Standard library only; prints 'N passed, N failed'.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

RINGLOAD = sys.argv[1]
DATA = os.path.join(sys.argv[2], "tensorizer")
results = {"passed": 0, "failed": 0}
SECRETS = tempfile.mkdtemp(prefix="ringload-cli-test-")


def check(name, condition, detail=""):
    if condition:
        results["passed"] += 1
    else:
        results["failed"] += 1
        print(f"FAIL {name}: {detail}")


def run(*args):
    return subprocess.run([RINGLOAD, *args], capture_output=True, text=True, timeout=120)


def secret_args(spec, kind):
    """--key-file / --passphrase-file for a manifest's encryption (or a bad case's open_with)."""
    if kind is None:
        return []
    path = os.path.join(SECRETS, f"secret{len(os.listdir(SECRETS))}")
    if kind == "raw_key":
        with open(path, "wb") as f:
            f.write(bytes.fromhex(spec["key_hex"]))
        return ["--key-file", path]
    with open(path, "w", encoding="utf-8") as f:
        f.write(spec["passphrase"] + "\n")  # a trailing newline, as `echo` writes, is not part of it
    return ["--passphrase-file", path]


def manifest_rows(manifest):
    return [
        {"name": t["name"] if t["name"] is not None else None, "path": t["path"],
         "dtype": t["dtype"].removeprefix("torch."), "shape": t["shape"], "sha256": t["sha256"]}
        for t in manifest["tensors"]
    ]


index = json.load(open(os.path.join(DATA, "index.json")))
for entry in index["files"]:
    path = os.path.join(DATA, entry["file"])
    manifest = json.load(open(os.path.join(DATA, entry["manifest"])))
    keys = []
    if entry["encrypted"]:
        out = run("load", path, "--json")
        label = f"load {entry['file']} without a key"
        check(label, out.returncode != 0 and "encrypted: supply a key" in out.stderr, out.stderr)
        check(label + " one line", out.stderr.count("\n") == 1, out.stderr)
        keys = secret_args(manifest["encryption"], manifest["encryption"]["kind"])
    for extra in ([], ["--verify"]):
        out = run("load", path, "--json", "--sha256", *extra, *keys)
        label = f"load {entry['file']} {' '.join(extra + keys[:1])}"
        check(label + " exit", out.returncode == 0, out.stderr)
        if out.returncode != 0:
            continue
        got = json.loads(out.stdout)
        check(label + " format", got["format"] == "tensorizer")
        check(label + " bytes", got["bytes"] == sum(t["byte_length"] for t in manifest["tensors"]))
        check(label + " seconds", got["seconds"] > 0)
        want = manifest_rows(manifest)
        check(label + " count", len(got["tensors"]) == len(want))
        for g, w in zip(got["tensors"], want):
            for key in ("path", "dtype", "shape", "sha256"):
                check(f"{label} {w['path']} {key}", g[key] == w[key], f"{g[key]!r} != {w[key]!r}")
    info = run("info", path, "--json")
    check(f"info {entry['file']}", info.returncode == 0, info.stderr)
    if info.returncode == 0:
        got = json.loads(info.stdout)
        check(f"info {entry['file']} version", got["data_version"] == manifest["data_version"])
        check(f"info {entry['file']} encrypted", got["encrypted"] == entry["encrypted"])
        check(f"info {entry['file']} shapes", [t["shape"] for t in got["tensors"]] ==
              [t["shape"] for t in manifest["tensors"]])

# --filter: regex over the display name, in file order.
large = os.path.join(DATA, "large_mixed_v2.tensors")
manifest = json.load(open(large + ".json"))
out = run("load", large, "--json", "--sha256", "--filter", r"\.bfloat16$")
want = [t for t in manifest["tensors"] if re.search(r"\.bfloat16$", t["name"])]
check("filter exit", out.returncode == 0, out.stderr)
got = json.loads(out.stdout)["tensors"] if out.returncode == 0 else []
check("filter count", len(got) == len(want) and len(want) > 0, f"{len(got)} vs {len(want)}")
check("filter values", [g["sha256"] for g in got] == [w["sha256"] for w in want])

# Human-readable summary.
out = run("load", large, "--verify")
check("summary", out.returncode == 0 and re.search(r"loaded 127 tensors, 8000000 bytes in .* GB/s", out.stdout),
      out.stdout + out.stderr)

# Bad files: non-zero exit, one line on stderr naming the file and the category.
bad = json.load(open(os.path.join(DATA, "bad", "manifest.json")))
for case in bad["cases"]:
    path = os.path.join(DATA, "bad", case["file"])
    out = run("load", path, "--verify", *secret_args(case["open_with"], case["open_with"]["decryption"]))
    label = f"bad {case['file']}"
    check(label + " exit", out.returncode != 0, out.stdout)
    lines = out.stderr.strip().splitlines()
    check(label + " one line", len(lines) == 1, out.stderr)
    check(label + " category", case["expected_error_category"] in out.stderr and case["file"] in out.stderr,
          out.stderr)

for args, needle in [(["load", "/nonexistent.tensors"], "not found"),
                     (["load", large, "--device", "gpu0"], "--device: option device must be cpu, cuda or cuda:N"),
                     (["load", large, "--dtype", "int8"],
                      "--dtype: option dtype must be float64, float32, float16 or bfloat16, not 'int8'"),
                     (["load", large, "--filter", "("], "regular expression"),
                     (["load", "http://127.0.0.1:1/x.tensors"], "http"),
                     (["load", large, "--slot-size", "1000"], "4096"),
                     (["load", large, "--key-file", "/nonexistent.key"], "/nonexistent.key"),
                     (["load", large, "--key-file", large], "64 KiB"),
                     (["load", large, "--key-file", os.path.join(DATA, "index.json")], "32 raw bytes"),
                     (["load", large, "--passphrase-file", os.devnull], "empty")]:
    out = run(*args)
    check(f"error {args}", out.returncode != 0 and needle in out.stderr and out.stderr.count("\n") == 1, out.stderr)
# A choice's value the option table refuses: the option, the words it takes, what was given.
out = run("load", large, "--prefault", "sometimes")
check("error --prefault sometimes", out.returncode != 0 and "--prefault: option prefault must be one of auto, "
      "background, on-touch" in out.stderr and "not 'sometimes'" in out.stderr and not out.stdout, out.stderr)
# A flag the command does not know: the same words as an unknown option in Python and vLLM.
out = run("load", large, "--thread", "2")
check("error --thread", out.returncode != 0 and "unknown option '--thread'; the options are " in out.stderr and
      "--threads" in out.stderr and out.stderr.count("\n") == 1, out.stderr)

# --device cuda: on a machine with a GPU the device bytes (copied back) equal the CPU load's;
# without one, one line that names the device and says why.
cpu_rows = json.loads(run("load", large, "--json", "--sha256").stdout)["tensors"]
out = run("load", large, "--device", "cuda:0", "--json", "--sha256", "--verify")
if out.returncode == 0:
    check("cuda:0 load equals the cpu load", json.loads(out.stdout)["tensors"] == cpu_rows)
else:
    check("cuda:0 without a GPU says why", out.stderr.count("\n") == 1 and "cuda:0" in out.stderr and
          ("no usable CUDA device" in out.stderr or "built without CUDA" in out.stderr), out.stderr)

# A secret never shows up in what the command prints.
enc = os.path.join(DATA, "encrypted_passphrase_v3.tensors")
enc_manifest = json.load(open(enc + ".json"))
out = run("load", enc, "--verify", *secret_args(enc_manifest["encryption"], "passphrase"))
check("passphrase load", out.returncode == 0, out.stderr)
check("passphrase not printed", enc_manifest["encryption"]["passphrase"] not in out.stdout + out.stderr)
wrong = os.path.join(SECRETS, "wrong")
with open(wrong, "w") as f:
    f.write("not the passphrase")
out = run("load", enc, *["--passphrase-file", wrong])
check("wrong passphrase", out.returncode != 0 and "decryption failed" in out.stderr and
      "not the passphrase" not in out.stderr, out.stderr)

# convert: remove, add and change encryption; each output loads to the manifest's values.
with tempfile.TemporaryDirectory() as tmp:
    pass_file = os.path.join(tmp, "new-pass")
    with open(pass_file, "w", encoding="utf-8") as f:
        f.write("a new passphrase\n")
    for entry in index["files"]:
        source = os.path.join(DATA, entry["file"])
        manifest = json.load(open(os.path.join(DATA, entry["manifest"])))
        keys = secret_args(manifest["encryption"], manifest["encryption"]["kind"]) if entry["encrypted"] else []
        decrypt = [keys[0].replace("--", "--decrypt-"), keys[1]] if keys else []
        plain, sealed = os.path.join(tmp, "plain.tensors"), os.path.join(tmp, "sealed.tensors")
        out = run("convert", source, plain, *decrypt)
        label = f"convert {entry['file']}"
        check(label + " to plain", out.returncode == 0 and "wrote" in out.stdout, out.stderr)
        out = run("convert", plain, sealed, "--encrypt-passphrase-file", pass_file)
        check(label + " to a passphrase", out.returncode == 0 and "encrypted" in out.stdout, out.stderr)
        for path, extra in ((plain, []), (sealed, ["--passphrase-file", pass_file])):
            out = run("load", path, "--json", "--sha256", "--verify", *extra)
            check(f"{label} -> {os.path.basename(path)} loads", out.returncode == 0, out.stderr)
            got = json.loads(out.stdout)["tensors"] if out.returncode == 0 else []
            check(f"{label} -> {os.path.basename(path)} values",
                  [(g["path"], g["dtype"], g["shape"], g["sha256"]) for g in got] ==
                  [(w["path"], w["dtype"], w["shape"], w["sha256"]) for w in manifest_rows(manifest)])
        info = json.loads(run("info", sealed, "--json").stdout)
        check(label + " sealed is encrypted", info["encrypted"] and info["data_version"] in (3, 4), info)
    check("convert passphrase not printed", "a new passphrase" not in out.stdout + out.stderr)

    target = os.path.join(tmp, "target.tensors")
    for args, needle in [(["convert", enc, target], "encrypted: supply a key"),
                         (["convert", large, target, "--decrypt-key-file", wrong], "32 raw bytes"),
                         (["convert", large, target, "--decrypt-passphrase-file", pass_file], "not encrypted"),
                         (["convert", large, os.path.join(tmp, "no", "such", "dir.tensors")], "no/such"),
                         (["convert", large, target, "--encrypt-key-file", os.path.join(tmp, "nothing")], "nothing")]:
        out = run(*args)
        check(f"convert error {args[-2:]}", out.returncode != 0 and needle in out.stderr and
              out.stderr.count("\n") == 1, out.stderr)
        check(f"convert error {args[-2:]} leaves nothing", not os.path.exists(target), os.listdir(tmp))
    out = run("convert", large, target, "--encrypt-key-file", wrong, "--encrypt-passphrase-file", pass_file)
    check("convert two encryption secrets refused", out.returncode != 0 and "not both" in out.stderr, out.stderr)

# The URI argument's help names every source open_input reads, not only files.
for command in ("info", "load"):
    out = run(command, "--help")
    check(f"{command} --help names the sources", out.returncode == 0 and
          all(scheme in out.stdout for scheme in ("file://", "https://", "s3://", "redis://")), out.stdout)

shutil.rmtree(SECRETS)
print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
