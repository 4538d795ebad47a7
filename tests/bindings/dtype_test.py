#!/usr/bin/env python3
"""tests/bindings/dtype_test.py RINGLOAD DATA_DIR

`ringload load --dtype T` (CPU path) against torch's own casts, and against the real
tensorizer's `TensorDeserializer(dtype=...)`:
  1. a file the real tensorizer writes here, with float32, float16, bfloat16 and float64 tensors
     full of edge values (rounding ties, overflow to infinity, subnormals, NaN, signed zeros) and
     integer and bool tensors: for every target type, each floating tensor's bytes equal
     `tensor.to(T)` in torch, and the others keep their stored bytes and type, with and without
     --verify;
  2. every unencrypted fixture, and an encrypted one, loaded with --dtype float16 and bfloat16
     give tensorizer's values (dtype=...) for every floating tensor;
  3. --dtype with a non-floating type is refused, naming the option.
Exits 77 (skipped, with the reason) where torch or tensorizer cannot be imported.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from checks import Checks  # noqa: E402
from fixture_keys import key_args  # noqa: E402

try:
    import torch
    from tensorizer import TensorDeserializer, TensorSerializer
    from tensorizer import DecryptionParams
except ImportError as error:
    print(f"SKIP: torch and the real tensorizer are needed ({error}); run scripts/setup.sh")
    sys.exit(77)

RINGLOAD, DATA = sys.argv[1:3]
checks = Checks()
FLOATING = (torch.float64, torch.float32, torch.float16, torch.bfloat16)
TARGETS = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def ringload_cast(tensor, target):
    """torch's cast, with ringload's one documented choice where torch has two: a NaN becomes
    bfloat16 0x7FC0 (c10's scalar rule; torch's vectorised CPU path gives 0xFFFF)."""
    cast = tensor.to(target)
    if target == torch.bfloat16 and tensor.dtype != target:
        bits = cast.view(torch.int16).clone()
        bits[torch.isnan(tensor)] = 0x7FC0
        cast = bits.view(torch.bfloat16)
    return cast


def sha_of(tensor):
    if tensor.dim() == 0:
        tensor = tensor.reshape(1)
    return hashlib.sha256(tensor.detach().contiguous().view(torch.uint8).numpy().tobytes()).hexdigest()


def ringload_rows(path, extra):
    run = subprocess.run([RINGLOAD, "load", path, "--sha256", "--json", *extra], capture_output=True, text=True)
    if run.returncode != 0:
        return None, run.stderr
    return json.loads(run.stdout)["tensors"], ""


def edge_tensors():
    """Tensors whose casts exercise every rounding rule; seeded, so a failure reproduces."""
    generator = torch.Generator().manual_seed(5)
    f32 = torch.cat([
        torch.tensor([0.0, -0.0, 1.0, -2.5, 65504.0, 65519.0, 65520.0, 1e10, -1e10, float("inf"), float("-inf"),
                      float("nan"), 2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 2.0 ** -14, 2.0 ** -140,
                      1 + 2.0 ** -11, 1 + 3 * 2.0 ** -11, 1 + 2.0 ** -8, 1 + 3 * 2.0 ** -8,
                      3.4028234663852886e38], dtype=torch.float32),
        torch.randn(4096, generator=generator) * 300,
        torch.randn(4096, generator=generator) * 1e-6,
        # Every bit pattern of a float16's range, spread over float32 mantissas.
        torch.randint(-(2 ** 31), 2 ** 31 - 1, (8192,), generator=generator, dtype=torch.int32).view(torch.float32),
    ])
    every_half = torch.arange(0, 65536, dtype=torch.int32).to(torch.int16).view(torch.float16)
    every_bf16 = torch.arange(0, 65536, dtype=torch.int32).to(torch.int16).view(torch.bfloat16)
    return {
        "f32.edges": f32,
        "f16.every": every_half.clone(),
        "bf16.every": every_bf16.clone(),
        "f64.edges": torch.cat([f32.double(), torch.tensor([1e300, -1e-300, 1 + 2.0 ** -30], dtype=torch.float64)]),
        "f32.matrix": (torch.randn(64, 48, generator=generator) * 10),
        "i64.ids": torch.arange(0, 100, dtype=torch.int64),
        "bool.mask": torch.arange(0, 50) % 3 == 0,
    }


def check_edge_file(tmp):
    tensors = edge_tensors()
    path = os.path.join(tmp, "edges.tensors")
    serializer = TensorSerializer(path)
    serializer.write_state_dict(tensors)
    serializer.close()
    names = list(tensors)
    for target_name, target in TARGETS.items():
        for verify in ([], ["--verify"]):
            rows, error = ringload_rows(path, ["--dtype", target_name, *verify])
            label = f"edges --dtype {target_name} {' '.join(verify)}"
            checks.check(f"{label}: loads", rows is not None, error)
            if rows is None:
                continue
            for name, row in zip(names, rows):
                stored = tensors[name]
                expected = ringload_cast(stored, target) if stored.dtype in FLOATING else stored
                checks.check(f"{label}: {name} dtype", row["dtype"] == str(expected.dtype).replace("torch.", ""),
                             f"{row['dtype']} vs {expected.dtype}")
                checks.check(f"{label}: {name} bytes equal torch's cast", row["sha256"] == sha_of(expected),
                             f"{name}: {stored.dtype} -> {target}")


def check_fixtures_against_tensorizer(tmp):
    with open(os.path.join(DATA, "tensorizer", "index.json")) as f:
        index = json.load(f)
    files = [entry["file"] for entry in index["files"]]
    encrypted_done = False
    for file in files:
        path = os.path.join(DATA, "tensorizer", file)
        with open(path + ".json") as f:
            manifest = json.load(f)
        manifest.setdefault("file", file)
        encryption = manifest.get("encryption")
        if encryption and encrypted_done:
            continue
        decryption = None
        if encryption:
            encrypted_done = True
            if encryption["kind"] == "raw_key":
                decryption = DecryptionParams.from_key(bytes.fromhex(encryption["key_hex"]))
            else:
                decryption = DecryptionParams.from_string(encryption["passphrase"])
        for target_name in ("float16", "bfloat16"):
            target = TARGETS[target_name]
            rows, error = ringload_rows(path, ["--dtype", target_name, *key_args(manifest, tmp)])
            checks.check(f"{file} --dtype {target_name}: loads", rows is not None, error)
            if rows is None:
                continue
            peer = TensorDeserializer(path, device="cpu", dtype=target, lazy_load=True, encryption=decryption)
            theirs = [tensor for _i, _t, _n, tensor in peer.read_tensors()]
            peer.close()
            checks.check(f"{file}: tensor count", len(theirs) == len(rows), f"{len(theirs)} vs {len(rows)}")
            for row, tensor, stored in zip(rows, theirs, manifest["tensors"]):
                if stored["dtype"].replace("torch.", "") not in TARGETS:
                    # tensorizer casts integer tensors too; ringload keeps their stored type.
                    checks.check(f"{file}: {row['name']} keeps its type", row["dtype"] == stored["dtype"][6:])
                    continue
                checks.check(f"{file} --dtype {target_name}: {row['name']} equals tensorizer's",
                             row["sha256"] == sha_of(tensor) and row["dtype"] == target_name, row["name"])
    checks.check("an encrypted fixture was among them", encrypted_done)


def check_refusals():
    any_file = os.path.join(DATA, "tensorizer", "basic_v1.tensors")
    run = subprocess.run([RINGLOAD, "load", any_file, "--dtype", "int8"], capture_output=True, text=True)
    refusal = "--dtype: option dtype must be float64, float32, float16 or bfloat16, not 'int8'"
    checks.check("--dtype int8 is refused", run.returncode != 0 and refusal in run.stderr, run.stderr)


with tempfile.TemporaryDirectory() as tmp:
    check_edge_file(tmp)
    check_fixtures_against_tensorizer(tmp)
    check_refusals()
sys.exit(checks.finish())
