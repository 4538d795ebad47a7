#!/usr/bin/env python3
"""What one ctest run did, from its JUnit file: every skip with its reason, and the time it took.

    scripts/ctest_report.py BUILD_DIR JUNIT_XML [--slowest N]

ctest counts a test that exits 77 (or prints its skip pattern) as skipped and still exits 0, so
a run where nginx, moto or redis-server did not start could pass without running the tests that
need them. scripts/test.sh calls this after each ctest: it prints each skipped test and the
lines of its output that say why, and exits 1 when a test skipped that is not labelled `gpu`
(on these machines only the GPU may be missing; the GPU tests run on the device machine). With
--slowest it also prints the N slowest tests and the time per label (docs/testing.md's tables).
Last, each failed test's last lines of output: CI keeps only the end of a run's output, where
ctest's own --output-on-failure text has scrolled away (a tsan failure once showed only a name).
"""
import argparse
import collections
import json
import subprocess
import sys
import xml.etree.ElementTree as ElementTree


def labels_of_tests(build_dir):
    """{test name: [labels]}, from ctest's own listing of the build's tests."""
    listing = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"], capture_output=True,
                             text=True, check=True)
    labels = {}
    for test in json.loads(listing.stdout)["tests"]:
        values = [p["value"] for p in test.get("properties", []) if p["name"] == "LABELS"]
        labels[test["name"]] = values[0] if values else []
    return labels


def skip_reason(output):
    """The lines of a skipped test's output that say why (else its last line)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    saying = [line for line in lines if "skip" in line.lower()]
    return "; ".join(saying[-3:] or lines[-1:]) or "(no output)"


def failure_tail(case, lines=40):
    """The last lines a failed test printed (a sanitizer's report, a gtest assertion)."""
    failure = case.find("failure")
    message = failure.get("message") if failure is not None else None
    text = "\n".join(filter(None, [case.findtext("system-out"), message]))
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    # A sanitizer's one-line summaries first: its report's stacks can push them out of the tail.
    summaries = [line for line in kept[:-lines] if "SUMMARY:" in line][:5]
    return summaries + kept[-lines:] or ["(no output)"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("build_dir")
    parser.add_argument("junit")
    parser.add_argument("--slowest", type=int, default=0)
    args = parser.parse_args()
    labels = labels_of_tests(args.build_dir)
    cases = ElementTree.parse(args.junit).getroot().iter("testcase")
    refused, seconds, failed = [], {}, []
    for case in cases:
        name = case.get("name")
        seconds[name] = float(case.get("time") or 0)
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(case)
        if case.find("skipped") is None:
            continue
        gpu = "gpu" in labels.get(name, [])
        reason = skip_reason(case.findtext("system-out") or "")
        print(f"skipped: {name}{' (gpu)' if gpu else ''}: {reason[:300]}")
        if not gpu:
            refused.append(name)
    if args.slowest:
        print(f"slowest {args.slowest} tests:")
        for name, took in sorted(seconds.items(), key=lambda item: -item[1])[:args.slowest]:
            print(f"  {took:7.1f} s  {name}  [{';'.join(labels.get(name, []))}]")
        per_label = collections.Counter()
        for name, took in seconds.items():
            for label in labels.get(name, []) or ["(none)"]:
                per_label[label] += took
        print("test time per label (a test counts under each of its labels): " +
              ", ".join(f"{label} {took:.0f} s" for label, took in per_label.most_common()))
    for case in failed:
        print(f"failed: {case.get('name')}; the end of its output:")
        for line in failure_tail(case):
            print(f"  | {line[:400]}")
    if refused:
        print(f"FAILED: {len(refused)} test(s) skipped that only a missing GPU may skip: {', '.join(refused)}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
