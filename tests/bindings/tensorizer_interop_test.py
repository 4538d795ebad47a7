#!/usr/bin/env python3
"""tests/bindings/tensorizer_interop_test.py RINGLOAD RINGLOAD_SYNTH DATA_DIR RINGLOAD_WRITE_CASES

The real tensorizer (PyPI, in the project's .venv) as an independent peer:
  1. a checkpoint written by ringload-synth loads in tensorizer with verify_hash=True, and
     tensorizer's tensors have the same sha256, dtype and shape as `ringload load --sha256`;
  2. every unencrypted fixture gives the same per-tensor sha256 in tensorizer and ringload;
  3. files tensorizer encrypts now (a random key, a passphrase with fresh Argon2id salt, a
     tensor over several 2 MiB cipher chunks, bf16, meta) decrypt in ringload to tensorizer's
     values, and a wrong key is refused;
  4. files ringload's writer makes (plain, encrypted with a key, encrypted with a passphrase; fp16,
     fp32, bf16, int64, 0-d, zero-element, meta (fp32, bf16, 0-d), nested names, a flat key
     starting with U+001E, a tensor over five cipher chunks; 4,000 tensors, past tensorizer's
     fixed 256 KiB index) load in tensorizer with
     verify_hash=True to the values they were written from (the writer tool's manifest);
  5. `ringload convert` re-encrypts a tensorizer-written file, and tensorizer decrypts ours;
  6. `ringload convert` of a file tensorizer wrote with several module indexes (write_tensor's
     idx, 0 to 65535; tensors of several MiB, so several batches) is byte-identical to it.
Exits 77 (skipped, with the reason) where tensorizer cannot be imported.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

try:
    import torch
    from tensorizer import TensorDeserializer, TensorSerializer
    from tensorizer import DecryptionParams, EncryptionParams
except ImportError as error:
    print(f"SKIP: the real tensorizer is not importable here ({error}); run scripts/setup.sh")
    sys.exit(77)

RINGLOAD, SYNTH, DATA, WRITE_CASES = sys.argv[1:5]
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    if not condition:
        print(f"FAIL {name}: {detail}")


def tensorizer_view(path, encryption=None):
    """(name or path, dtype, shape, sha256) per tensor in file order, as tensorizer loads them."""
    rows = []
    d = TensorDeserializer(path, device="cpu", lazy_load=True, verify_hash=True, encryption=encryption)
    for _idx, _type, name, tensor in d.read_tensors():
        dtype, tensor = tensor.dtype, tensor.detach().contiguous()
        if dtype in (torch.bfloat16, torch.complex32):  # numpy has neither: hash the raw bits
            tensor = tensor.view(torch.int16 if dtype == torch.bfloat16 else torch.int32)
        rows.append((list(name) if isinstance(name, (list, tuple)) else [name], str(dtype).removeprefix("torch."),
                     list(tensor.shape), hashlib.sha256(tensor.numpy().tobytes()).hexdigest()))
    d.close()
    return rows


def ringload_view(path, *extra):
    out = subprocess.run([RINGLOAD, "load", path, "--json", "--sha256", "--verify", *extra], capture_output=True,
                         text=True, timeout=300, check=True)
    return [(t["path"], t["dtype"], t["shape"], t["sha256"]) for t in json.loads(out.stdout)["tensors"]]


with tempfile.TemporaryDirectory() as tmp:
    for dtype in ("float16", "float32"):
        path = os.path.join(tmp, f"synth_{dtype}.tensors")
        subprocess.run([SYNTH, "--shape", "tiny", "--dtype", dtype, "--seed", "3", path], check=True,
                       capture_output=True)
        theirs, ours = tensorizer_view(path), ringload_view(path)
        check(f"synth {dtype} count", len(theirs) == len(ours) > 0, f"{len(theirs)} vs {len(ours)}")
        for t, o in zip(theirs, ours):
            check(f"synth {dtype} {t[0]}", t == o, f"tensorizer {t} != ringload {o}")

index = json.load(open(os.path.join(DATA, "tensorizer", "index.json")))
for entry in index["files"]:
    if entry["encrypted"]:
        continue
    path = os.path.join(DATA, "tensorizer", entry["file"])
    theirs, ours = tensorizer_view(path), ringload_view(path)
    check(f"{entry['file']} count", len(theirs) == len(ours))
    for t, o in zip(theirs, ours):
        check(f"{entry['file']} {t[0]}", t[3] == o[3] and t[2] == o[2], f"{t} != {o}")

with tempfile.TemporaryDirectory() as tmp:
    generator = torch.Generator().manual_seed(11)
    state = {
        "big": torch.randn(1 << 20, generator=generator),  # 4 MiB: two full cipher chunks
        "odd": torch.randn(3, 700_001, generator=generator),  # 8.4 MB: a short last chunk
        "half": torch.randn(64, 33, generator=generator).to(torch.bfloat16),
        "small": torch.arange(7, dtype=torch.int64),
        "ghost": torch.empty(5, 4, device="meta"),
    }
    key_file = os.path.join(tmp, "key")
    pass_file = os.path.join(tmp, "pass")
    passphrase = "interop passphrase \u2713"
    with open(pass_file, "w", encoding="utf-8") as f:
        f.write(passphrase + "\n")
    random_key = EncryptionParams.random()
    with open(key_file, "wb") as f:
        f.write(random_key.key)
    cases = [
        ("key", random_key, DecryptionParams.from_key(random_key.key), ["--key-file", key_file]),
        ("passphrase", EncryptionParams.from_string(passphrase, opslimit=2, memlimit=64 << 20),
         DecryptionParams.from_string(passphrase), ["--passphrase-file", pass_file]),
    ]
    for label, encryption, decryption, args in cases:
        path = os.path.join(tmp, f"enc_{label}.tensors")
        serializer = TensorSerializer(path, encryption=encryption)
        serializer.write_state_dict(state)
        serializer.close()
        theirs, ours = tensorizer_view(path, decryption), ringload_view(path, *args)
        check(f"encrypted {label} count", len(theirs) == len(ours) == len(state), f"{len(theirs)} vs {len(ours)}")
        for t, o in zip(theirs, ours):
            check(f"encrypted {label} {t[0]}", t == o, f"tensorizer {t} != ringload {o}")
    wrong = os.path.join(tmp, "wrong")
    with open(wrong, "wb") as f:
        f.write(bytes(32))
    out = subprocess.run([RINGLOAD, "load", os.path.join(tmp, "enc_key.tensors"), "--key-file", wrong],
                         capture_output=True, text=True, timeout=300)
    check("encrypted wrong key refused", out.returncode != 0 and "decryption failed" in out.stderr, out.stderr)

    # 5. ringload convert: tensorizer's passphrase file -> ours with a fresh key -> tensorizer.
    ours_path = os.path.join(tmp, "ours_from_passphrase.tensors")
    our_key = os.path.join(tmp, "our_key")
    with open(our_key, "wb") as f:
        f.write(os.urandom(32))
    subprocess.run([RINGLOAD, "convert", os.path.join(tmp, "enc_passphrase.tensors"), ours_path,
                    "--decrypt-passphrase-file", pass_file, "--encrypt-key-file", our_key],
                   check=True, capture_output=True, timeout=300)
    theirs = tensorizer_view(ours_path, DecryptionParams.from_key(open(our_key, "rb").read()))
    original = tensorizer_view(os.path.join(tmp, "enc_passphrase.tensors"), DecryptionParams.from_string(passphrase))
    check("convert re-encrypted count", len(theirs) == len(original) == len(state))
    for t, o in zip(theirs, original):
        check(f"convert re-encrypted {t[0]}", t == o, f"{t} != {o}")

# 4. Files our writer makes, read by tensorizer.
with tempfile.TemporaryDirectory() as tmp:
    key_file = os.path.join(tmp, "key")
    pass_file = os.path.join(tmp, "pass")
    with open(key_file, "wb") as f:
        f.write(os.urandom(32))
    passphrase = "our passphrase \u00e9"
    with open(pass_file, "w", encoding="utf-8") as f:
        f.write(passphrase + "\n")
    out = subprocess.run([WRITE_CASES, "cases", tmp, key_file, pass_file], capture_output=True, text=True,
                         timeout=300, check=True)
    manifest = json.loads(out.stdout)
    decryptions = {"plain.tensors": (None, []), "many.tensors": (None, []),
                   "key.tensors": (DecryptionParams.from_key(open(key_file, "rb").read()), ["--key-file", key_file]),
                   "passphrase.tensors": (DecryptionParams.from_string(passphrase), ["--passphrase-file", pass_file])}
    for entry in manifest["files"]:
        path = os.path.join(tmp, entry["file"])
        decryption, args = decryptions[entry["file"]]
        expected = [(t["path"], t["dtype"], t["shape"], t["sha256"]) for t in entry["tensors"]]
        try:
            theirs = tensorizer_view(path, decryption)
        except Exception as error:  # a file tensorizer cannot read is the failure we test for
            check(f"ours {entry['file']} readable by tensorizer", False, repr(error))
            continue
        check(f"ours {entry['file']} count", len(theirs) == len(expected), f"{len(theirs)} vs {len(expected)}")
        for t, e in zip(theirs, expected):
            check(f"ours {entry['file']} {e[0]} in tensorizer", t == e, f"tensorizer {t} != written {e}")
        for o, e in zip(ringload_view(path, *args), expected):
            check(f"ours {entry['file']} {e[0]} in ringload", o == e, f"ringload {o} != written {e}")

# 6. Every per-tensor header field survives a rewrite: module indexes other than 0 included.
with tempfile.TemporaryDirectory() as tmp:
    from tensorizer.serialization import TensorType
    theirs_path, ours_path = os.path.join(tmp, "modules.tensors"), os.path.join(tmp, "rewritten.tensors")
    generator = torch.Generator().manual_seed(6)
    serializer = TensorSerializer(theirs_path)
    for i, module in enumerate([0, 1, 1, 7, 300, 65535, 2, 2]):
        rows = 1 + (i % 3) * 1000  # up to 8 MiB: the rewrite loads in several batches
        kind = (TensorType.PARAM, TensorType.BUFFER, TensorType.STATE_DICT)[i % 3]
        serializer.write_tensor(module, f"layer{i}.weight", kind, torch.randn(rows, 1024, generator=generator))
    serializer.close()
    subprocess.run([RINGLOAD, "convert", theirs_path, ours_path], check=True, capture_output=True, timeout=300)
    with open(theirs_path, "rb") as theirs, open(ours_path, "rb") as ours:
        a, b = theirs.read(), ours.read()
    first = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), None)
    check("convert keeps module indexes: byte-identical", a == b,
          f"sizes {len(a)} / {len(b)}, first difference at byte {first}")

print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
