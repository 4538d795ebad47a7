#!/usr/bin/env python3
"""tests/bindings/wheel_test.py DATA_DIR: the wheel, built once, installed into clean venvs, used (issue #28).

1. scripts/build_wheel.sh builds the sdist (python -m build --sdist), which holds the sources
   and no build tree and configures with Unix Makefiles (with CUDA where the toolkit is), and
   the wheel from it (pip wheel + auditwheel repair); auditwheel names
   a manylinux platform, and the wheel holds the module, the stubs, the `ringload` command and
   the shared libraries they need beyond the manylinux set.
2. A venv without system site packages (from /usr/bin/python3): `pip install` of the wheel
   (numpy from PyPI) installs the `ringload` command, which loads the fixtures with the
   manifests' sha256; `python -m ringload` is the same command; the installed module and
   command find every library they need in the system's base set (glibc, libstdc++) or in the
   wheel, none from -dev packages' places; the package reads a tensorizer file into numpy.
3. A venv that sees Debian's torch 1.13 (--system-site-packages) with the wheel installed
   (--no-deps) and the .venv's PyPI peers (tensorizer, safetensors): the package's own pytest
   files pass from it, importing the installed package (not the build tree).
"""
import glob
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "support"))
from checks import Checks  # noqa: E402

DATA = os.path.abspath(sys.argv[1])
REPO = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
checks = Checks()
check = checks.check
BASE_LIBRARIES = ("libc.so", "libm.so", "libstdc++.so", "libgcc_s.so", "libpthread.so", "libdl.so", "librt.so",
                  "ld-linux", "linux-vdso")


def run(*args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=kwargs.pop("timeout", 1800), **kwargs)


def foreign_libraries(path, inside):
    """The libraries `path` loads from neither the base set nor the directory `inside`."""
    out = run("ldd", path)
    foreign = []
    for line in out.stdout.splitlines():
        name, _, where = line.strip().partition(" => ")
        location = where.split(" (")[0].strip()
        if "not found" in line or (location and not location.startswith(inside)
                                   and not any(base in name for base in BASE_LIBRARIES)):
            foreign.append(line.strip())
    return foreign


# With the dev build's flags (Debug) unless told otherwise (scripts/test.sh --full: Release, as
# shipped): its objects then come from ccache, the dev build's, not from a second compile.
build_type = os.environ.get("RINGLOAD_WHEEL_BUILD_TYPE", "Debug")
print(f"building the sdist and the wheel ({build_type})", flush=True)
built = run(os.path.join(REPO, "scripts", "build_wheel.sh"), cwd=REPO, timeout=3600,
            env={**os.environ, "RINGLOAD_WHEEL_BUILD_TYPE": build_type})
wheels = [p for p in built.stdout.split() if p.endswith(".whl")]
sdists = [p for p in built.stdout.split() if p.endswith(".tar.gz")]
check("scripts/build_wheel.sh builds one sdist, and one wheel from it",
      built.returncode == 0 and len(wheels) == 1 and len(sdists) == 1, (built.stderr or built.stdout)[-2000:])
if built.returncode != 0 or len(wheels) != 1 or len(sdists) != 1:
    sys.exit(checks.finish())

# The sdist: the sources a packager builds from, without build trees, venvs or test data.
sdist = os.path.join(REPO, sdists[0])
with tarfile.open(sdist) as archive:
    members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
for wanted in ("CMakeLists.txt", "CMakePresets.json", "pyproject.toml", "engine/CMakeLists.txt",
               "formats/CMakeLists.txt", "io/CMakeLists.txt", "gpu/CMakeLists.txt", "bindings/CMakeLists.txt",
               "cmake/ringloadConfig.cmake.in"):
    check(f"the sdist holds {wanted}", wanted in members)
left_in = sorted({m.split("/")[0] for m in members if m.split("/")[0] in ("build", ".venv", ".venv-vllm", ".git")})
check("the sdist holds no build tree, venv or .git", left_in == [], left_in)
# Configured from the unpacked sdist with CMake's default generator (Unix Makefiles), with the
# CUDA toolkit where the machine has one (the wheel above was built from it with Ninja).
unpacked = glob.glob(os.path.join(REPO, "build", "sdist", "ringload-*"))[0]
with tempfile.TemporaryDirectory() as tmp:
    configured = run("cmake", "-S", unpacked, "-B", tmp, "-G", "Unix Makefiles", timeout=600)
    cuda = "The CUDA compiler identification" in configured.stdout
    check(f"the unpacked sdist configures with Unix Makefiles ({'with' if cuda else 'without'} CUDA)",
          configured.returncode == 0, (configured.stderr or configured.stdout)[-2000:])
    check("CUDA is configured where the toolkit is installed",
          cuda or not os.path.exists("/usr/local/cuda/bin/nvcc"), configured.stdout[-1000:])

wheel = os.path.join(REPO, wheels[0])
print(f"wheel: {os.path.basename(wheel)}, {os.path.getsize(wheel) / 1e6:.1f} MB")
check("the wheel is tagged manylinux", "manylinux" in os.path.basename(wheel), os.path.basename(wheel))
names = zipfile.ZipFile(wheel).namelist()
for wanted in ("ringload/_bin/ringload", "ringload/_ringload.pyi", "ringload/__main__.py", "ringload/py.typed"):
    check(f"the wheel holds {wanted}", wanted in names)
check("the wheel holds the module", any(n.startswith("ringload/_ringload") and n.endswith(".so") for n in names))
grafted = [n for n in names if n.startswith("ringload.libs/")]
check("the wheel carries its libraries (liburing, libsodium, nghttp2, hiredis, ISA-L, OpenSSL)",
      all(any(lib in n for n in grafted) for lib in ("liburing", "libsodium", "libnghttp2", "libhiredis", "libisal",
                                                      "libssl")), grafted)

tensorizer_fixture = os.path.join(DATA, "tensorizer", "large_mixed_v2.tensors")
want = sorted(t["sha256"] for t in json.load(open(tensorizer_fixture + ".json"))["tensors"])
environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}

with tempfile.TemporaryDirectory() as tmp:
    clean = os.path.join(tmp, "clean")
    made = run("/usr/bin/python3", "-m", "venv", clean)
    check("a clean venv is made", made.returncode == 0, made.stderr)
    installed = run(os.path.join(clean, "bin", "pip"), "install", "-q", "--disable-pip-version-check", wheel,
                    env=environment)
    check("pip installs the wheel (and numpy) into a clean venv", installed.returncode == 0, installed.stderr[-1000:])
    command = os.path.join(clean, "bin", "ringload")
    for runner in ([command], [os.path.join(clean, "bin", "python"), "-m", "ringload"]):
        out = run(*runner, "load", tensorizer_fixture, "--verify", "--sha256", "--json", env=environment, cwd=tmp)
        got = sorted(t["sha256"] for t in json.loads(out.stdout)["tensors"]) if out.returncode == 0 else None
        check(f"`{' '.join(os.path.basename(r) for r in runner)} load --verify` gives the manifest's sha256",
              got == want, out.stderr[-500:])
    for torch_fixture in sorted(glob.glob(os.path.join(DATA, "torch", "*.pt")))[:3]:
        out = run(command, "info", torch_fixture, env=environment, cwd=tmp)
        check(f"the installed command reads {os.path.basename(torch_fixture)}", out.returncode == 0, out.stderr[-300:])
    site = glob.glob(os.path.join(clean, "lib", "python3*", "site-packages"))[0]
    for binary in glob.glob(os.path.join(site, "ringload", "_ringload*.so")) + [
            os.path.join(site, "ringload", "_bin", "ringload")]:
        foreign = foreign_libraries(binary, site)
        check(f"{os.path.relpath(binary, site)} needs nothing outside the base set and the wheel", foreign == [],
              "\n".join(foreign))
    numpy_load = ("import ringload, sys, hashlib\n"
                  "print(ringload.__file__)\n"
                  "with ringload.TensorDeserializer(sys.argv[1], device='cpu', verify_hash=True, lazy_load=True) as d:\n"
                  "    for row in d.read_numpy_arrays(allow_raw_data=True):\n"
                  "        print(hashlib.sha256(row[3].tobytes()).hexdigest())\n")
    out = run(os.path.join(clean, "bin", "python"), "-c", numpy_load, tensorizer_fixture, env=environment, cwd=tmp)
    lines = out.stdout.split()
    check("the installed package (numpy, no torch) reads a file: the manifest's sha256",
          out.returncode == 0 and lines[0].startswith(clean) and sorted(lines[1:]) == want,
          (out.stderr or out.stdout)[-500:])

    debian = os.path.join(tmp, "debian")
    run("/usr/bin/python3", "-m", "venv", "--system-site-packages", debian)
    installed = run(os.path.join(debian, "bin", "pip"), "install", "-q", "--no-deps", "--disable-pip-version-check",
                    wheel, env=environment)
    check("pip installs the wheel beside Debian's torch 1.13", installed.returncode == 0, installed.stderr[-1000:])
    peers = run(os.path.join(debian, "bin", "pip"), "install", "-q", "--no-deps", "--disable-pip-version-check",
                "-r", os.path.join(REPO, "scripts", "requirements-venv.txt"), env=environment)
    check("and the peers the tests compare with (.venv's PyPI packages)", peers.returncode == 0, peers.stderr[-500:])
    tests = [os.path.join(REPO, "tests", "bindings", name)
             for name in ("python_api_test.py", "formats_python_test.py", "python_niceties_test.py")]
    # strict_skips (tests/support, the only thing on PYTHONPATH): a skip other than a GPU's fails.
    support = os.path.join(REPO, "tests", "support")
    out = run(os.path.join(debian, "bin", "python"), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-p",
              "strict_skips", *tests, env={**environment, "RINGLOAD_TEST_DATA": DATA, "PYTHONPATH": support,
                                           # the wheel's own command, which some tests hold Python's answers against
                                           "RINGLOAD_CLI": os.path.join(debian, "bin", "ringload")}, cwd=tmp)
    check("the package's pytest files pass from the installed wheel", out.returncode == 0, out.stdout[-2000:])
    print(out.stdout.strip().splitlines()[-1] if out.stdout.strip() else out.stderr[-300:])
    out = run(os.path.join(debian, "bin", "python"), "-c", "import ringload; print(ringload.__file__)",
              env=environment, cwd=tmp)
    check("those tests imported the installed package", out.stdout.startswith(debian), out.stdout + out.stderr)

sys.exit(checks.finish())
