"""bench/peers/peer_run.py: what every peer script shares: the clock, the page touch, the output.

A peer script is `python bench/peers/<peer>.py FILE --device cpu|cuda[:N]`, run by
`ringload bench load` in a process of its own. It prints one JSON line on stdout:
    {"bytes", "seconds", "first_tensor_seconds", "peak_rss_bytes", "device_peak_bytes"}
or, when the peer cannot run here, {"unavailable": "<why>"} with exit status 77, so the table
says why instead of a number. The clock starts after torch is imported (every peer needs it,
and ringload's CLI pays no interpreter start-up either) and covers opening the file and having
every tensor's bytes in memory on the device.
"""
import argparse
import json
import resource
import sys
import time

UNAVAILABLE = 77


def parse_args(description):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("file")
    parser.add_argument("--device", default="cpu")
    return parser.parse_args()


def unavailable(reason):
    print(json.dumps({"unavailable": reason}))
    sys.exit(UNAVAILABLE)


def import_or_unavailable(module, package):
    """Imports `module`; if that fails the peer is reported as not installed, with the error."""
    import importlib

    try:
        return importlib.import_module(module)
    except Exception as error:  # ImportError, or a binary that does not load here
        unavailable(f"not installed: pip package {package} ({type(error).__name__}: {error})")


def require_device(device):
    import torch

    if device.startswith("cuda") and not torch.cuda.is_available():
        unavailable("no GPU: torch.cuda.is_available() is False")


class Clock:
    """Times one load: start() before opening, tensor(t) for each tensor as it arrives."""

    def __init__(self, device):
        self.device = device
        self.bytes = 0
        self.first_tensor_seconds = None

    def start(self):
        import torch

        if self.device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(self.device)
        self.started = time.perf_counter()

    def tensor(self, tensor):
        import torch

        # Mapped (lazily read) tensors are not loaded until touched: reading one byte of every
        # 4 KiB page makes each system's bytes resident, so all of them are timed alike.
        if tensor.device.type == "cpu" and tensor.numel():
            tensor.reshape(-1).view(torch.uint8)[::4096].sum().item()
        if self.first_tensor_seconds is None:
            if tensor.device.type == "cuda":
                torch.cuda.synchronize(tensor.device)
            self.first_tensor_seconds = time.perf_counter() - self.started
        self.bytes += tensor.numel() * tensor.element_size()

    def finish(self):
        import torch

        device_peak = None
        if self.device.startswith("cuda"):
            torch.cuda.synchronize(self.device)
            device_peak = torch.cuda.max_memory_allocated(self.device)
        seconds = time.perf_counter() - self.started
        peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        print(json.dumps({"bytes": self.bytes, "seconds": seconds,
                          "first_tensor_seconds": self.first_tensor_seconds or seconds,
                          "peak_rss_bytes": peak_rss_bytes, "device_peak_bytes": device_peak}))
