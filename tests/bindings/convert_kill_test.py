#!/usr/bin/env python3
"""tests/bindings/convert_kill_test.py RINGLOAD [TRIALS]: kill -9 at random points of conversions (issue #27, part 3).

`ringload convert` of a 256 MiB safetensors file to each of the three formats, killed with
SIGKILL at a random moment of its run (uniform over an uninterrupted run's time, seeded): after
every kill the target is either absent or a whole file that loads with its hashes verified and
holds the source's bytes, and no other file is left in the directory. Prints the figures
(kills, how many landed before/after the rename). Standard library only.
"""
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402
from kill_sources import loaded_sha256, write_varied_safetensors  # noqa: E402

RINGLOAD = sys.argv[1]
TRIALS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
checks = Checks()
check = checks.check


with tempfile.TemporaryDirectory() as tmp:
    source = os.path.join(tmp, "source.safetensors")
    write_varied_safetensors(source, count=4, mib_each=64, seed=27)  # 256 MiB: a kill lands mid-write
    rng = random.Random(27)  # when each kill comes
    expected, why = loaded_sha256(RINGLOAD, source)
    if expected is None:
        sys.exit(f"FAIL: the source does not load: {why}")
    out_dir = os.path.join(tmp, "out")
    os.mkdir(out_dir)
    figures = {}
    for extension in os.environ.get("KILL_FORMATS", ".tensors .safetensors .pt").split():
        target = os.path.join(out_dir, "model" + extension)
        started = time.monotonic()
        subprocess.run([RINGLOAD, "convert", source, target], check=True, capture_output=True, timeout=300)
        whole_run = time.monotonic() - started
        got, why = loaded_sha256(RINGLOAD, target)
        check(f"{extension}: an uninterrupted conversion holds the source's bytes", got == expected, why)
        os.remove(target)
        before = after = 0
        for trial in range(TRIALS):
            process = subprocess.Popen([RINGLOAD, "convert", source, target], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0.0, whole_run * 1.1))
            process.send_signal(signal.SIGKILL)
            process.wait()
            left = sorted(os.listdir(out_dir))
            if not left:
                before += 1
            else:
                after += 1
                check(f"{extension} kill {trial}: only the target remains", left == ["model" + extension], left)
                got, why = loaded_sha256(RINGLOAD, target)
                check(f"{extension} kill {trial}: the target is whole and verified", got == expected,
                      why or f"{len(got or [])} tensors loaded, sha256 {got} != {expected}")
                if got != expected:
                    os.replace(target, os.path.join(tmp, "..", f"ringload-kill-failure{extension}"))
                    continue
                os.remove(target)
        figures[extension] = (TRIALS, before, after, whole_run)
    for extension, (kills, before, after, seconds) in figures.items():
        print(f"convert to {extension}: {kills} kills over a {seconds:.2f} s run: {before} left nothing, "
              f"{after} left the whole file, 0 partial")

sys.exit(checks.finish())
