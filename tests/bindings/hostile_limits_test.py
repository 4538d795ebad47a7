#!/usr/bin/env python3
"""tests/bindings/hostile_limits_test.py RINGLOAD DATA_DIR: claims that would make memory or time grow (issue #27, part 2).

Files whose headers claim what no honest file of their size can hold: a tensorizer index of
2^40 tensors or 2^40 bytes, a tensor of 2^60 bytes, dims whose product overflows; a
safetensors length field of 2^60, shapes whose product overflows 64 bits, offsets to 2^60; a
zip end record claiming 65,535 entries or a zip64 record claiming 2^40 in a few bytes; pickles
that claim a 2^60-byte bytes object or a 2^40-character string, or nest marks a million deep.
Each must be refused by `ringload info` and `ringload load` with one clear error naming the file
(exit status 1, never a signal), in under 10 s and under 512 MiB of peak memory: before memory or
time grows with the claim. Standard library only.
"""
import io
import os
import struct
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from refusals import refuses  # noqa: E402

RINGLOAD, DATA = sys.argv[1], sys.argv[2]
checks = Checks()
check = checks.check


def refused(label, path, *extra):
    for command in ("info", "load"):
        refuses(check, f"{label}: {command}", [RINGLOAD, command, path, *extra], os.path.basename(path), seconds=10)


def patched(path, at, fmt, value, out):
    data = bytearray(open(path, "rb").read())
    struct.pack_into(fmt, data, at, value)
    with open(out, "wb") as f:
        f.write(data)
    return out


def safetensors(out, header_text, data_bytes=16):
    header = header_text.encode()
    with open(out, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + bytes(data_bytes))
    return out


def torch_zip(out, pickle_bytes, records=None):
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("archive/data.pkl", pickle_bytes)
        for name, data in (records or {}).items():
            archive.writestr(f"archive/data/{name}", data)
        archive.writestr("archive/version", b"3\n")
    return out


with tempfile.TemporaryDirectory() as tmp:
    tiny = os.path.join(DATA, "tensorizer", "tiny_v1.tensors")  # entry 'a': dims at 83, data_length at 102
    refused("tensorizer: 2^40 tensors", patched(tiny, 57, "<Q", 1 << 40, f"{tmp}/count.tensors"))
    refused("tensorizer: a 2^40-byte index", patched(tiny, 65, "<Q", 1 << 40, f"{tmp}/index.tensors"))
    refused("tensorizer: a 2^60-byte tensor", patched(tiny, 102, "<Q", 1 << 60, f"{tmp}/length.tensors"))
    refused("tensorizer: dims of 2^32-1", patched(tiny, 83, "<I", 0xFFFFFFFF, f"{tmp}/dims.tensors"))

    refused("safetensors: a 2^60-byte header", patched(
        safetensors(f"{tmp}/h.safetensors", '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}'),
        0, "<Q", 1 << 60, f"{tmp}/header_length.safetensors"))
    refused("safetensors: a shape whose product overflows", safetensors(
        f"{tmp}/overflow.safetensors",
        '{"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,16]}}'))
    refused("safetensors: offsets to 2^60", safetensors(
        f"{tmp}/offsets.safetensors", '{"a":{"dtype":"U8","shape":[1152921504606846976],'
        '"data_offsets":[0,1152921504606846976]}}'))
    many = "{" + ",".join(f'"t{i}":{{"dtype":"F32","shape":[1000000],"data_offsets":[0,4000000]}}'
                          for i in range(20000)) + "}"
    refused("safetensors: 20,000 tensors of 4 MB in 16 bytes", safetensors(f"{tmp}/many.safetensors", many))

    plain = os.path.join(DATA, "torch", "plain_state_dict.pt")
    data = open(plain, "rb").read()
    end = data.rfind(b"PK\x05\x06")
    record = data.rfind(b"PK\x06\x06")  # torch writes zip64 end records: theirs are the values read
    patched(plain, record + 24, "<Q", 65535, f"{tmp}/entries.pt")
    refused("zip: an end record claiming 65,535 entries", patched(f"{tmp}/entries.pt", record + 32, "<Q", 65535,
                                                                  f"{tmp}/entries.pt"))
    refused("zip: a directory claimed larger than the file",
            patched(plain, record + 40, "<Q", 1 << 40, f"{tmp}/directory.pt"))
    # A zip64 end record (and its locator) claiming 2^40 entries before the classic end record.
    zip64 = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, 1 << 40, 1 << 40, 46, 0)
    locator = struct.pack("<IIQI", 0x07064B50, 0, len(data[:end]), 1)
    with open(f"{tmp}/zip64.pt", "wb") as f:
        f.write(data[:end] + zip64 + locator + data[end:end + 8] + b"\xff\xff\xff\xff" + b"\xff\xff\xff\xff"
                + b"\xff\xff\xff\xff" + b"\x00\x00")
    refused("zip: a zip64 record claiming 2^40 entries", f"{tmp}/zip64.pt")

    refused("pickle: a bytes object of 2^60 bytes",
            torch_zip(f"{tmp}/bytes8.pt", b"\x80\x04\x8e" + struct.pack("<Q", 1 << 60) + b"abc."))
    refused("pickle: a string of 2^40 characters",
            torch_zip(f"{tmp}/unicode8.pt", b"\x80\x04\x8d" + struct.pack("<Q", 1 << 40) + b"abc."))
    refused("pickle: BINUNICODE claiming 2^31-1 bytes",
            torch_zip(f"{tmp}/unicode4.pt", b"\x80\x02X" + struct.pack("<I", 0x7FFFFFFF) + b"abc."))
    refused("pickle: BINSTRING claiming 2^31-1 bytes",
            torch_zip(f"{tmp}/string4.pt", b"\x80\x02T" + struct.pack("<i", 0x7FFFFFFF) + b"abc."))
    refused("pickle: a million nested marks", torch_zip(f"{tmp}/marks.pt", b"\x80\x02" + b"(" * 1_000_000 + b"."))
    refused("pickle: a list of 2^31 elements claimed by LONG4",
            torch_zip(f"{tmp}/long4.pt", b"\x80\x02\x8b" + struct.pack("<i", 0x7FFFFFFF) + b"\x01."))

sys.exit(checks.finish())
