#!/usr/bin/env python3
"""tests/bindings/format_writers_test.py RINGLOAD_WRITE_FORMATS

Our safetensors and torch zip writers against the real readers, as independent peers:
  1. safetensors (PyPI, 0.4.5): model.safetensors loads with safetensors.torch.load_file and
     safe_open (metadata included) to the expected values; it is byte-identical to what
     safetensors.torch.save makes of the same tensors and metadata; aligned.safetensors
     (64-byte data start, order kept, three metadata entries) loads the same; wide.safetensors
     (U16, U32, U64, F8_E4M3, F8_E5M2, which torch 1.13 lacks) passes the library's own
     framework-free parser (safetensors.deserialize) with the expected bytes, and its integer
     tensors load with safetensors.numpy.
  2. torch 1.13 (Debian): model.pt loads with torch.load(weights_only=True) to the expected
     nesting (OrderedDict at the top, dicts, lists), dtypes, shapes, contiguous strides and
     values, meta tensors as meta tensors; its data.pkl is byte-identical to what torch.save pickles for the loaded object;
     Python's zipfile finds every CRC right and every record's data 64-byte aligned.
  3. newer.pt (float8, uint16-64, complex32, a bf16 meta tensor): torch 1.13 refuses it, as it
     must; a torch-free unpickler finds the _rebuild_tensor_v3 / UntypedStorage calls torch >= 2.1
     reads (per docs torch-zip-format.md §7.3-§7.5) and the storages hold the expected bytes.
Expected values come from the writer tool's documented pattern, recomputed here: byte i of the
tensor with seed s is (i * 131 + s * 17 + 5) % 251 (& 1 for bool). The tool's manifest gives
names, dtypes, shapes and seeds only. Exits 77 (skipped, with the reason) where torch or
safetensors cannot be imported.
"""
import collections
import io
import json
import os
import pickle
import subprocess
import sys
import tempfile
import zipfile

try:
    import numpy
    import torch
    import safetensors
    import safetensors.numpy
    import safetensors.torch
except ImportError as error:
    print(f"SKIP: a peer library is not importable here ({error}); run scripts/setup.sh")
    sys.exit(77)

WRITE_FORMATS = sys.argv[1]
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    if not condition:
        print(f"FAIL {name}: {detail}")


ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2, "int8": 1,
            "uint8": 1, "bool": 1, "complex64": 8, "complex128": 16, "uint16": 2, "uint32": 4, "uint64": 8,
            "float8_e4m3fn": 1, "float8_e5m2": 1, "complex32": 4}
SAFETENSORS_NAME = {"float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16", "int64": "I64",
                    "int32": "I32", "int16": "I16", "int8": "I8", "uint8": "U8", "bool": "BOOL", "uint16": "U16",
                    "uint32": "U32", "uint64": "U64", "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2"}


def expected_bytes(row):
    count = 1
    for dim in row["shape"]:
        count *= dim
    values = bytes((i * 131 + row["seed"] * 17 + 5) % 251 for i in range(count * ITEMSIZE[row["dtype"]]))
    return bytes(v & 1 for v in values) if row["dtype"] == "bool" else values


def raw_bytes(tensor):
    """The tensor's elements in C order as stored (bf16 through int16: numpy has no bf16)."""
    tensor = tensor.detach().contiguous()
    if tensor.dtype == torch.bfloat16:
        tensor = tensor.view(torch.int16)
    return tensor.numpy().tobytes()


def joined(path):
    return ".".join(str(part) for part in path)


def contiguous_strides(shape):
    strides, step = [], 1
    for dim in reversed(shape):
        strides.insert(0, step)
        step *= max(dim, 1)
    return strides


def check_safetensors(path, entry):
    name = os.path.basename(path)
    rows = {joined(r["path"]): r for r in entry["tensors"]}
    metadata = dict(entry["metadata"])
    loaded = safetensors.torch.load_file(path)
    check(f"{name} names", sorted(loaded) == sorted(rows), f"{sorted(loaded)} vs {sorted(rows)}")
    for key, row in rows.items():
        tensor = loaded.get(key)
        if tensor is None:
            continue
        check(f"{name} {key} dtype", str(tensor.dtype) == "torch." + row["dtype"], str(tensor.dtype))
        check(f"{name} {key} shape", list(tensor.shape) == row["shape"], str(tensor.shape))
        check(f"{name} {key} values", raw_bytes(tensor) == expected_bytes(row))
    with safetensors.safe_open(path, framework="pt") as opened:
        check(f"{name} metadata", (opened.metadata() or {}) == metadata, f"{opened.metadata()}")
        for key in opened.keys():
            check(f"{name} {key} via safe_open", raw_bytes(opened.get_tensor(key)) == expected_bytes(rows[key]))
    with open(path, "rb") as f:
        data = f.read()
    length = int.from_bytes(data[:8], "little")
    check(f"{name} data start aligned", (8 + length) % entry["alignment"] == 0, str(8 + length))
    header = json.loads(data[8:8 + length], object_pairs_hook=collections.OrderedDict)
    if entry["metadata"]:
        check(f"{name} metadata order", [list(kv) for kv in header["__metadata__"].items()] == entry["metadata"],
              str(header["__metadata__"]))
    return loaded, data


def check_wide(path, entry):
    """dtypes torch 1.13 lacks: the library's own parser, and numpy for the integer ones."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        data = f.read()
    rows = {joined(r["path"]): r for r in entry["tensors"]}
    parsed = dict(safetensors.deserialize(data))
    check(f"{name} names", sorted(parsed) == sorted(rows), str(sorted(parsed)))
    for key, row in rows.items():
        got = parsed.get(key, {})
        check(f"{name} {key} dtype", got.get("dtype") == SAFETENSORS_NAME[row["dtype"]], str(got.get("dtype")))
        check(f"{name} {key} shape", list(got.get("shape", [])) == row["shape"], str(got.get("shape")))
        check(f"{name} {key} values", bytes(got.get("data", b"")) == expected_bytes(row))
    # numpy knows the unsigned types but not float8.
    numpy_rows = {k: r for k, r in rows.items() if not r["dtype"].startswith("float8")}
    with safetensors.safe_open(path, framework="numpy") as opened:
        for key, row in numpy_rows.items():
            array = opened.get_tensor(key)
            check(f"{name} {key} via numpy", str(array.dtype) == row["dtype"] and
                  array.tobytes() == expected_bytes(row), str(array.dtype))


def lookup(root, path):
    node = root
    for part in path:
        node = node[part]
    return node


def check_torch(path, entry):
    name = os.path.basename(path)
    try:
        loaded = torch.load(path, weights_only=True)
    except Exception as error:  # the failure this test is for
        check(f"{name} loads with weights_only=True", False, repr(error))
        return
    check(f"{name} top is an OrderedDict", type(loaded) is collections.OrderedDict, str(type(loaded)))
    check(f"{name} nested dict", type(loaded["model"]) is dict and type(loaded["table"]) is dict)
    check(f"{name} nested list", type(loaded["model"]["layers"]) is list and type(loaded["bank"]) is list)
    count = 0
    for row in entry["tensors"]:
        key = joined(row["path"])
        try:
            tensor = lookup(loaded, row["path"])
        except (KeyError, IndexError, TypeError) as error:
            check(f"{name} {key} present", False, repr(error))
            continue
        count += 1
        if row["meta"]:
            ok = (tensor.is_meta and str(tensor.dtype) == "torch." + row["dtype"] and
                  list(tensor.shape) == row["shape"] and list(tensor.stride()) == contiguous_strides(row["shape"]))
            check(f"{name} {key} (meta)", ok, f"{tensor.device} {tensor.dtype} {list(tensor.shape)}")
            continue
        ok = (str(tensor.dtype) == "torch." + row["dtype"] and list(tensor.shape) == row["shape"] and
              list(tensor.stride()) == contiguous_strides(row["shape"]) and tensor.storage_offset() == 0 and
              not tensor.requires_grad and raw_bytes(tensor) == expected_bytes(row))
        check(f"{name} {key}", ok, f"{tensor.dtype} {list(tensor.shape)} {tensor.stride()}")
    check(f"{name} every tensor", count == len(entry["tensors"]), f"{count} of {len(entry['tensors'])}")

    # The pickle is the one torch itself writes for the object it loaded.
    saved = io.BytesIO()
    torch.save(loaded, saved)
    with zipfile.ZipFile(saved) as theirs:
        their_pickle = theirs.read("archive/data.pkl")
    with zipfile.ZipFile(path) as ours:
        check(f"{name} CRCs (zipfile.testzip)", ours.testzip() is None)
        names = ours.namelist()
        check(f"{name} record order", names[:5] == ["archive/data.pkl", "archive/.format_version",
                                                    "archive/.storage_alignment", "archive/byteorder",
                                                    "archive/data/0"] and names[-1] == "archive/version",
              str(names[:6]))
        check(f"{name} data.pkl byte-identical to torch.save's", ours.read("archive/data.pkl") == their_pickle)
        check(f"{name} byteorder", ours.read("archive/byteorder") == b"little")
        with open(path, "rb") as f:
            data = f.read()
        misaligned = []
        for info in ours.infolist():
            name_length = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little")
            extra_length = int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
            if (info.header_offset + 30 + name_length + extra_length) % 64:
                misaligned.append(info.filename)
        check(f"{name} data 64-byte aligned", not misaligned, str(misaligned[:5]))


class SpecUnpickler(pickle.Unpickler):
    """Reads a data.pkl into plain values without torch: rebuild calls become tuples, globals
    of torch become their names. What torch >= 2.1 would call, with which arguments, is then
    checked against the spec (torch-zip-format.md §7.3-§7.5)."""
    ALLOWED = {("collections", "OrderedDict"), ("torch._utils", "_rebuild_tensor_v2"),
               ("torch._utils", "_rebuild_tensor_v3"), ("torch._utils", "_rebuild_meta_tensor_no_storage")}

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            if module == "collections":
                return collections.OrderedDict
            return lambda *args: (name, args)
        if module == "torch" or (module, name) == ("torch.storage", "UntypedStorage"):
            return f"{module}.{name}"
        raise pickle.UnpicklingError(f"unexpected global {module}.{name}")

    def persistent_load(self, pid):
        return pid


def check_newer_torch(path, entry):
    """float8 / uint16-64 / complex32 / a bf16 meta tensor: torch 1.13 must refuse the file (it
    cannot hold these); the pickle must be what torch >= 2.1 reads, and the storages the bytes."""
    name = os.path.basename(path)
    try:
        torch.load(path, weights_only=True)
        check(f"{name} refused by torch 1.13", False, "it loaded")
    except Exception:  # any refusal: 1.13 knows neither the dtypes nor _rebuild_tensor_v3
        check(f"{name} refused by torch 1.13", True)
    with zipfile.ZipFile(path) as archive:
        check(f"{name} CRCs (zipfile.testzip)", archive.testzip() is None)
        state = SpecUnpickler(io.BytesIO(archive.read("archive/data.pkl"))).load()
        for row in entry["tensors"]:
            key = joined(row["path"])
            call, args = state[key]
            if row["meta"]:
                check(f"{name} {key} (meta)", call == "_rebuild_meta_tensor_no_storage" and
                      args == ("torch." + row["dtype"], tuple(row["shape"]),
                               tuple(contiguous_strides(row["shape"])), False), str(args))
                continue
            nbytes = len(expected_bytes(row))
            pid, offset, size, stride, requires_grad, hooks = args[:6]
            legacy = row["dtype"] == "float32"
            ok = (call == ("_rebuild_tensor_v2" if legacy else "_rebuild_tensor_v3") and
                  len(args) == (6 if legacy else 7) and pid[0] == "storage" and pid[3] == "cpu" and
                  pid[1] == ("torch.FloatStorage" if legacy else "torch.storage.UntypedStorage") and
                  pid[4] == (nbytes // ITEMSIZE[row["dtype"]] if legacy else nbytes) and offset == 0 and
                  size == tuple(row["shape"]) and stride == tuple(contiguous_strides(row["shape"])) and
                  requires_grad is False and hooks == collections.OrderedDict() and
                  (legacy or args[6] == "torch." + row["dtype"]))
            check(f"{name} {key} rebuild call", ok, str((call, args)))
            check(f"{name} {key} storage bytes", archive.read(f"archive/data/{pid[2]}") == expected_bytes(row))


def main():
    with tempfile.TemporaryDirectory(prefix="ringload-format-writers-") as out:
        made = subprocess.run([WRITE_FORMATS, out], capture_output=True, text=True, timeout=300)
        if made.returncode != 0:
            print(made.stderr)
            check("write_formats ran", False, f"exit {made.returncode}")
            return
        manifest = json.loads(made.stdout)

        entry = manifest["model.safetensors"]
        path = os.path.join(out, "model.safetensors")
        loaded, ours = check_safetensors(path, entry)
        # The reference writer, given the same tensors and metadata, makes the same bytes.
        theirs = safetensors.torch.save(loaded, metadata=dict(entry["metadata"]))
        check("model.safetensors byte-identical to safetensors.torch.save", ours == theirs,
              f"{len(ours)} vs {len(theirs)} bytes")

        check_safetensors(os.path.join(out, "aligned.safetensors"), manifest["aligned.safetensors"])
        check_wide(os.path.join(out, "wide.safetensors"), manifest["wide.safetensors"])
        check_torch(os.path.join(out, "model.pt"), manifest["model.pt"])
        check_newer_torch(os.path.join(out, "newer.pt"), manifest["newer.pt"])


main()
print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
