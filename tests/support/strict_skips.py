"""pytest plugin (`-p strict_skips`, with tests/support on PYTHONPATH): a skip must say why, and
on this project's test machines only the GPU may be missing.

ctest counts a pytest run that skipped half its tests as Passed, so a machine where nginx, moto
or redis-server did not start could pass the suite without running what it names. Every pytest
run of the test command loads this plugin: it prints each skip with its reason at the end (as
`-rs` does) and fails the run when a skip's reason is not an allowed one. Allowed everywhere: no
CUDA device (the device machine runs those tests: scripts/gpu_check.sh). A suite adds the skips it
may make for reasons of its own with `--allow-skip REGEX` (matched against the reason), each
with a comment saying why at the place that passes it (tests/safetensors_upstream/run.py,
tests/tensorizer_upstream/run.py).
"""
import re

import pytest

# A skip for want of a GPU is expected on the CPU machines; nothing else is.
GPU_REASON = re.compile(r"\bCUDA\b|\bGPU\b|cuda device", re.IGNORECASE)


def pytest_addoption(parser):
    parser.addoption("--allow-skip", action="append", default=[], metavar="REGEX",
                     help="a skip whose reason matches REGEX does not fail the run (strict_skips)")


class SkipLedger:
    """The skips of one run, and which of them the run may not make (registered as a plugin)."""

    def __init__(self, allowed):
        self.allowed = [GPU_REASON] + [re.compile(pattern) for pattern in allowed]
        self.skips = []

    def record(self, report):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        self.skips.append((report.nodeid, reason, any(p.search(reason) for p in self.allowed)))

    def refused(self):
        return [(nodeid, reason) for nodeid, reason, allowed in self.skips if not allowed]

    def pytest_runtest_logreport(self, report):
        # A skip at set-up (skipif, importorskip in a fixture) or in the call (pytest.skip).
        if report.skipped and not hasattr(report, "wasxfail"):
            self.record(report)

    def pytest_collectreport(self, report):
        # A module skipped as a whole (pytest.skip(allow_module_level=True), importorskip at import).
        if report.skipped:
            self.record(report)

    def pytest_terminal_summary(self, terminalreporter):
        for nodeid, reason, allowed in self.skips:
            terminalreporter.write_line(f"SKIPPED {nodeid}: {reason}" + ("" if allowed else "  <- not allowed here"))
        if self.refused():
            terminalreporter.write_line(f"strict_skips: {len(self.refused())} skip(s) for a reason other than a "
                                        "missing GPU: the run fails (only GPU tests may skip here)", red=True)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        if self.refused() and session.exitstatus == 0:
            session.exitstatus = 1


def pytest_configure(config):
    config.pluginmanager.register(SkipLedger(config.getoption("--allow-skip")), "ringload_skip_ledger")
