#!/usr/bin/env python3
"""tests/bindings/writer_kill_test.py RINGLOAD_WRITE_CASES

A write killed mid-way (kill -9) leaves the previous file, if any, as it was and no partial
file. The writer tool writes a 256 MiB tensor and stalls for 5 s in its first progress report,
after some windows are on disk; this test waits for that, checks that the process holds an
unnamed temporary file in the target directory with bytes in it, kills it, and looks.
"""
import os
import signal
import subprocess
import sys
import tempfile

WRITE_CASES = sys.argv[1]
results = {"passed": 0, "failed": 0}


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    if not condition:
        print(f"FAIL {name}: {detail}")


def temporary_bytes(pid, directory):
    """Bytes in the files the process has open in `directory` that have no name there."""
    total = 0
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
            if target.startswith(directory + "/") and target.endswith("(deleted)"):
                total = max(total, os.stat(os.path.join(fd_dir, fd)).st_size)
        except OSError:
            pass
    return total


for previous in (b"the previous model", None):
    label = "with a previous file" if previous else "without a previous file"
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR", "/tmp")) as tmp:
        tmp = os.path.realpath(tmp)
        target = os.path.join(tmp, "model.tensors")
        if previous:
            with open(target, "wb") as f:
                f.write(previous)
        writer = subprocess.Popen([WRITE_CASES, "slow", target, "256"], stdout=subprocess.PIPE, text=True)
        line = writer.stdout.readline()
        check(f"{label}: the write started", line.strip() == "writing", line)
        written = temporary_bytes(writer.pid, tmp)
        check(f"{label}: bytes went to an unnamed temporary file first", written > 0, written)
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=60)
        check(f"{label}: killed", writer.returncode == -signal.SIGKILL, writer.returncode)
        names = sorted(os.listdir(tmp))
        if previous:
            check(f"{label}: only the previous file is there", names == ["model.tensors"], names)
            with open(target, "rb") as f:
                check(f"{label}: the previous file is intact", f.read() == previous)
        else:
            check(f"{label}: nothing is there", names == [], names)

print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
