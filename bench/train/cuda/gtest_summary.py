#!/usr/bin/env python3
"""Summarizes GoogleTest JSON reports (--gtest_output=json:FILE) for scripts/gpu-check: one line per
binary with its counts, then each failed or skipped test with the first line of its message.

  gtest_summary.py report.json [report.json ...]
"""
import json
import os
import sys


def summarize(path):
    name = os.path.splitext(os.path.basename(path))[0]
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        return [f"- {name}: no report ({e.__class__.__name__}); the binary crashed or did not start"]
    failed, skipped, total = [], [], 0
    for suite in report.get("testsuites", []):
        for test in suite.get("testsuite", []):
            total += 1
            full = f"{suite['name']}.{test['name']}"
            if test.get("failures"):
                # "file:line\nFailed\n<message>": keep the message, drop gtest's boilerplate.
                lines = [l for l in test["failures"][0].get("failure", "").strip().splitlines()
                         if l.strip() and l.strip() != "Failed"]
                failed.append(f"{full}: {' / '.join(lines[:3])[:300]}")
            elif test.get("result") == "SKIPPED":
                skipped.append(full)
    passed = total - len(failed) - len(skipped)
    lines = [f"- {name}: {total} tests, {passed} passed, {len(failed)} failed, {len(skipped)} skipped"]
    lines += [f"  - FAILED {f}" for f in failed[:15]]
    if len(failed) > 15:
        lines.append(f"  - ... and {len(failed) - 15} more failures")
    lines += [f"  - skipped {s}" for s in skipped[:5]]
    return lines


def main():
    for path in sys.argv[1:]:
        print("\n".join(summarize(path)))


if __name__ == "__main__":
    main()
