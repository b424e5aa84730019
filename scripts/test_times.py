#!/usr/bin/env python3
"""The test run's figures, from nextest's JUnit files: one line counting every test, and the slowest ten.

    scripts/test_times.py JUNIT...            the count line and the slowest ten (what scripts/test.sh prints)
    scripts/test_times.py JUNIT... --table    tests/README.md's timing table: every suite, its tests, its time

A file that does not exist (a run that did not get to write it) is said and counted as nothing.
"""
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def cases(path):
    for suite in ET.parse(path).getroot().iter("testsuite"):
        for case in suite.iter("testcase"):
            failed = case.find("failure") is not None or case.find("error") is not None
            skipped = case.find("skipped") is not None
            name, binary = case.get("name"), suite.get("name")
            # exectl's integration tests are one binary (tests/suite.rs): a test's file is the first part of
            # its name, and is its suite here.
            if binary == "exectl::suite" and "::" in name:
                file, name = name.split("::", 1)
                binary = f"exectl::{file}"
            yield binary, name, float(case.get("time") or 0), failed, skipped


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    files = [a for a in sys.argv[1:] if not a.startswith("--")]
    rows = []
    for f in files:
        if os.path.exists(f):
            rows += [r for r in cases(f) if not r[4]]
        else:
            print(f"{f}: missing (that run wrote no report)")
    if "--table" in sys.argv[2:]:
        table(rows)
        return
    ran = sorted(rows, key=lambda r: -r[2])
    print("slowest ten:")
    for suite, name, t, failed, _ in ran[:10]:
        print(f"  {t:7.1f} s  {suite} {name}{'  FAILED' if failed else ''}")
    failed = sum(1 for r in rows if r[3])
    print(f"tests: {len(rows) - failed} passed, {failed} failed")


def table(rows):
    suites = defaultdict(list)
    for suite, name, t, failed, _ in rows:
        suites[suite].append((t, name))
    total = sum(t for s in suites.values() for t, _ in s)
    print("| suite | tests | seconds (sum) | slowest test (seconds) |")
    print("|---|---:|---:|---|")
    for suite, tests in sorted(suites.items(), key=lambda kv: -sum(t for t, _ in kv[1])):
        s = sum(t for t, _ in tests)
        t, name = max(tests)
        print(f"| `{suite}` | {len(tests)} | {s:.0f} | `{name}` ({t:.0f}) |")
    print(f"| all | {len(rows)} | {total:.0f} | |")


if __name__ == "__main__":
    main()
