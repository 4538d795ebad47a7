"""tests/support/refusals.py: a command that must refuse hostile input, and soon.

    refuses(check, "label: load", [RINGLOAD, "load", url], names=url_host, seconds=30)

The command must end with exit status 1 (never a signal), say why in one line of stderr that
holds `names` (the file or URL), within `seconds`, and under 512 MiB of peak memory (the
children's: a claim the client believed would show there). Gives the command `seconds` twice
over before killing it as hung. Returns that line ("" if it hung).
"""
import resource
import subprocess
import time

PEAK_MIB_MAX = 512


def refuses(check, label, argv, names, seconds):
    started = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        _, stderr = process.communicate(timeout=2 * seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        check(f"{label} ends", False, f"still running after {2 * seconds} s")
        return ""
    took = time.monotonic() - started
    peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    lines = stderr.strip().splitlines()
    check(f"{label} refuses with exit status 1", process.returncode == 1, f"exit {process.returncode}: {stderr[-300:]}")
    check(f"{label} says so in one line naming {names}", len(lines) == 1 and names in lines[0], stderr[-300:])
    check(f"{label} within {seconds} s", took < seconds, f"{took:.1f} s")
    check(f"{label} under {PEAK_MIB_MAX} MiB", peak_mib < PEAK_MIB_MAX, f"{peak_mib:.0f} MiB")
    return f"{took:.1f} s: {lines[-1] if lines else ''}"
