#!/usr/bin/env python3
"""Reads `go test -json` on stdin and prints what `go test` would (each
package's ok/FAIL line, and the whole output of every test that failed),
then the slowest tests and each package's time, so a slow test shows in
CI's log. Exits 1 when a test or a package failed (the caller also checks
go test's own status)."""
import json
import sys
from collections import defaultdict

output = defaultdict(list)  # (package, test) -> lines
# elapsed[(package, top-level test)]: its time, at least its longest
# subtest's (a test whose subtests run in parallel reports 0 itself).
elapsed = defaultdict(float)
packages = []               # (seconds, package, action)
failed = False

for line in sys.stdin:
    try:
        e = json.loads(line)
    except ValueError:
        print(line, end="")  # go test's own words (a build error)
        continue
    pkg, test, action = e.get("Package", ""), e.get("Test"), e.get("Action")
    short = pkg.rsplit("/", 1)[-1]
    if action == "output":
        output[(pkg, test)].append(e.get("Output", ""))
        if test is None and not e.get("Output", "").startswith(("ok ", "FAIL", "PASS", "---", "===")):
            # Package-level words: a panic, a build failure, coverage.
            print(e["Output"], end="")
        continue
    if action not in ("pass", "fail", "skip"):
        continue
    if test is None:
        if action == "skip":
            continue  # no test files: go test's "?" line said so
        packages.append((e.get("Elapsed", 0.0), short, action))
        print(f"{'ok  ' if action == 'pass' else 'FAIL'}\t{pkg}\t{e.get('Elapsed', 0.0):.1f}s", flush=True)
        if action == "fail":
            failed = True
        continue
    top = (short, test.split("/", 1)[0])
    elapsed[top] = max(elapsed[top], e.get("Elapsed", 0.0))
    if action == "fail":
        failed = True
        print(f"--- FAIL: {test} ({short}, {e.get('Elapsed', 0.0):.2f}s)")
        print("".join(output[(pkg, test)]), end="", flush=True)
    output.pop((pkg, test), None)

print("\n== the 25 slowest tests")
for (pkg, test), secs in sorted(elapsed.items(), key=lambda kv: -kv[1])[:25]:
    print(f"{secs:8.1f}s  {pkg:20s} {test}")
print("== packages")
for secs, pkg, action in sorted(packages, reverse=True):
    print(f"{secs:8.1f}s  {pkg:20s} {action}")
sys.exit(1 if failed else 0)
