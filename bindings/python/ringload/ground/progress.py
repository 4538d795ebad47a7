"""A progress bar for long loads and writes, shown where a person watches.

    progress = progress_callback(progress_bar, "model.safetensors")  # None: no bar
    ... the engine calls progress(bytes_done, bytes_total, tensors_done, tensors_total) ...

progress_bar: None (the default) shows a bar only when stderr is a terminal and the
environment does not say otherwise (RINGLOAD_PROGRESS=0 turns bars off, =1 on, for every
load); True shows one anyway, False never. The bar is tqdm's where tqdm is installed, else a
one-line bar of our own on stderr. Loads and writes under 64 MiB get no bar (unless forced):
they end before it would help.
"""
from __future__ import annotations

import os
import sys
import time
from typing import Callable, Optional

SMALL_LOAD_BYTES = 64 << 20


def wants_bar(progress_bar: Optional[bool]) -> bool:
    if progress_bar is not None:
        return bool(progress_bar)
    forced = os.environ.get("RINGLOAD_PROGRESS", "").strip().lower()
    if forced in ("0", "false", "no", "off"):
        return False
    if forced in ("1", "true", "yes", "on"):
        return True
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


class _TextBar:
    """What tqdm would show, in one rewritten line: "label  42% 1.3/3.1 GB 2.4 GB/s"."""

    def __init__(self, label: str, total: int):
        self.label, self.total, self.started, self.shown_at = label, total, time.monotonic(), 0.0

    def update_to(self, done: int) -> None:
        now = time.monotonic()
        if now - self.shown_at < 0.1 and done < self.total:
            return
        self.shown_at = now
        rate = done / max(now - self.started, 1e-9)
        percent = 100 * done // max(self.total, 1)
        sys.stderr.write(f"\r{self.label} {percent:3d}% {done / 1e9:.2f}/{self.total / 1e9:.2f} GB "
                         f"{rate / 1e9:.2f} GB/s")
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()


class _TqdmBar:
    def __init__(self, tqdm, label: str, total: int):
        self.bar = tqdm(total=total, desc=label, unit="B", unit_scale=True, unit_divisor=1024)

    def update_to(self, done: int) -> None:
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def _new_bar(label: str, total: int):
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _TextBar(label, total)
    return _TqdmBar(tqdm, label, total)


def progress_callback(progress_bar: Optional[bool], uri: str) -> Optional[Callable[[int, int, int, int], None]]:
    """The engine's progress callback that draws the bar, or None when no bar is wanted. The bar
    is labelled with the file's base name (never a URL's query: it may hold a signature)."""
    if not wants_bar(progress_bar):
        return None
    label = os.path.basename(uri.split("?", 1)[0].rstrip("/")) or uri.split("?", 1)[0]
    state = {"bar": None, "forced": progress_bar is True}

    def progress(bytes_done: int, bytes_total: int, tensors_done: int, tensors_total: int) -> None:
        del tensors_done, tensors_total
        if state["bar"] is None:
            if bytes_total < SMALL_LOAD_BYTES and not state["forced"]:
                return
            state["bar"] = _new_bar(label, bytes_total)
        state["bar"].update_to(bytes_done)
        if bytes_done >= bytes_total:
            state["bar"].close()
            state["bar"] = False  # drawn and closed: later calls of a finished load draw nothing

    return lambda *step: None if state["bar"] is False else progress(*step)
