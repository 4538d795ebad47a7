"""A load inside a real one-CPU CFS quota (issue #52, part 4): a Kubernetes CPU limit is a cgroup
quota, not an affinity mask, so the process still sees every core. The test makes a cpu cgroup
(v1 cpu.cfs_quota_us, or v2 cpu.max where the cpu controller is v2's), limits it to one CPU (and
to half of one), starts a Python process inside it and asks the engine what it chose there: its
cores (the worker threads, files read at once), the CPUs placement "auto" counts, and placement
"auto" for a cached file read into parameters (the file's pages on one CPU, as under taskset -c
0). Needs root and a writable cpu cgroup, as the test command has; elsewhere it fails saying why.
"""
import json
import os
import subprocess
import sys
import uuid

import pytest


V1 = "/sys/fs/cgroup/cpu"
V2 = "/sys/fs/cgroup"

CHILD = r"""
import json, os, sys
from ringload import _ringload
path = sys.argv[1]
print(json.dumps({"cpus_available": _ringload.cpus_available(),
                  "files_at_once": _ringload.files_read_at_once([path] * 8, False),
                  "into_parameters": _ringload.choose_placement("auto", path, use="into_parameters"),
                  "affinity": len(os.sched_getaffinity(0))}))
"""


class CpuCgroup:
    """A cpu cgroup of the test's own with a quota; removed at the end."""

    def __init__(self):
        name = f"ringload-test-{uuid.uuid4().hex[:8]}"
        if os.path.isfile(os.path.join(V1, "cpu.cfs_quota_us")):
            self.dir, self.v2 = os.path.join(V1, name), False
        elif "cpu" in open(os.path.join(V2, "cgroup.subtree_control")).read().split():
            self.dir, self.v2 = os.path.join(V2, name), True
        else:
            raise RuntimeError("no cpu cgroup controller to write to (v1 /sys/fs/cgroup/cpu, or v2 with cpu in "
                               "/sys/fs/cgroup/cgroup.subtree_control)")
        os.mkdir(self.dir)

    def limit(self, quota_us: int, period_us: int = 100000) -> None:
        if self.v2:
            self._write("cpu.max", f"{quota_us} {period_us}")
        else:
            self._write("cpu.cfs_period_us", str(period_us))
            self._write("cpu.cfs_quota_us", str(quota_us))

    def run(self, *argv) -> dict:
        procs = os.path.join(self.dir, "cgroup.procs")
        # (A shell moves itself in and execs the child: no Python runs between fork and exec.)
        out = subprocess.run(["sh", "-c", 'echo $$ > "$0" && exec "$@"', procs, *argv], capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    def remove(self) -> None:
        os.rmdir(self.dir)

    def _write(self, name: str, value: str) -> None:
        with open(os.path.join(self.dir, name), "w") as file:
            file.write(value)


@pytest.fixture
def cgroup():
    try:
        made = CpuCgroup()
    except (OSError, RuntimeError) as error:
        pytest.fail(f"cannot make a cpu cgroup here (the test command runs as root): {error}")
    yield made
    made.remove()


@pytest.fixture
def cached_file(tmp_path):
    import torch
    import ringload
    path = str(tmp_path / "model.safetensors")
    ringload.save_file({"w": torch.ones(1024, 256)}, path)
    with open(path, "rb") as file:
        file.read()  # in the page cache
    return path


def test_a_one_cpu_quota_is_one_core_to_the_engine(cgroup, cached_file):
    child = [sys.executable, "-c", CHILD, cached_file]
    free = cgroup.run(*child)  # the cgroup with no limit yet: the affinity mask decides
    assert free["cpus_available"] == free["affinity"] and free["files_at_once"] == free["affinity"], free
    cgroup.limit(100000)  # one CPU's time per 100 ms, on every core
    limited = cgroup.run(*child)
    assert limited["affinity"] == free["affinity"], "the quota is not an affinity mask"
    assert limited["cpus_available"] == 1.0 and limited["files_at_once"] == 1, limited
    # Placement "auto" into parameters on one CPU: the file's pages, as under taskset -c 0.
    assert limited["into_parameters"] == "mapped", limited
    pinned = subprocess.run(["taskset", "-c", "0", *child], capture_output=True, text=True, timeout=120)
    assert json.loads(pinned.stdout)["into_parameters"] == limited["into_parameters"], pinned.stderr
    cgroup.limit(50000)  # half a CPU: still one worker
    half = cgroup.run(*child)
    assert half["cpus_available"] == 0.5 and half["files_at_once"] == 1, half


def test_the_quota_load_reads_every_tensor(cgroup, cached_file):
    """A load inside the quota is whole (one worker thread does all the stages)."""
    cgroup.limit(100000)
    loaded = cgroup.run(sys.executable, "-c", "import json, sys, ringload; t = ringload.load_file(sys.argv[1]); "
                        "print(json.dumps({'sum': float(t['w'].sum()), 'shape': list(t['w'].shape)}))", cached_file)
    assert loaded == {"sum": 1024.0 * 256, "shape": [1024, 256]}
