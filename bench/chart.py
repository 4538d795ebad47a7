#!/usr/bin/env python3
"""bench/chart.py RESULT.json OUT.png: the chart of a `ringload bench load` or `bench limits` run.

load: one bar per system (GB/s), the binding limit as a horizontal line, systems that could not
run listed under the axis with why. limits: one bar per figure. Run by `ringload --png`.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")  # no display: write the file only
import matplotlib.pyplot as plt  # noqa: E402

result = json.load(open(sys.argv[1]))
figure, axes = plt.subplots(figsize=(10, 5.5))
if result["kind"] == "load":
    rows = [r for r in result["systems"] if "gb_per_s" in r]
    missing = [f"{r['system']} ({r['format']}): {r['unavailable']}" for r in result["systems"] if "unavailable" in r]
    labels = [f"{r['system']}\n{r['format']}" for r in rows]
    colors = ["tab:blue" if r["system"] == "ringload" else "tab:gray" for r in rows]
    axes.bar(labels, [r["gb_per_s"] for r in rows], color=colors)
    limit = result["limit"]
    axes.axhline(limit["gb_per_s"], color="tab:red", linestyle="--", label=f"limit: {limit['name']} {limit['gb_per_s']:.2f} GB/s")
    axes.legend()
    axes.set_title(f"{result['model']} to {result['device']} ({result['machine']['cpu']}, {result['machine']['cores']} cores)",
                   fontsize=9)
    if missing:
        figure.text(0.01, 0.01, "not measured: " + "; ".join(missing), fontsize=7, wrap=True)
        figure.subplots_adjust(bottom=0.25)
else:
    rows = [r for r in result["figures"] if "gb_per_s" in r]
    axes.barh([r["name"] for r in rows], [r["gb_per_s"] for r in rows], color="tab:blue")
    axes.set_xscale("log")
    axes.set_xlabel("GB/s")
    axes.set_title(f"limits: {result['machine']['cpu']}, {result['machine']['cores']} cores", fontsize=9)
    figure.tight_layout()
if result["kind"] == "load":
    axes.set_ylabel("GB/s")
    plt.setp(axes.get_xticklabels(), fontsize=8, rotation=20, ha="right")  # long peer names do not overlap
figure.savefig(sys.argv[2], dpi=100)
