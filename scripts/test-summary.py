#!/usr/bin/env python3
"""The suite's summary from ctest's JUnit report (scripts/test.sh writes it): how many entries ran and passed,
how many were skipped and why, which passed with a part skipped and why, which failed. ctest's own summary counts
a skipped entry among the passed ("100% tests passed") and its log writes "Test Passed." for it; this one does not.

Usage: test-summary.py JUNIT.xml   (exit code 0; the caller keeps ctest's)
"""
import sys
import xml.etree.ElementTree as ET


def reason_lines(output, prefix):
    """The lines of a test's output that start with `prefix` (the test binary's SKIPPED lines)."""
    return [line for line in (output or "").splitlines() if line.startswith(prefix)]


def main():
    if len(sys.argv) != 2:
        print("usage: test-summary.py JUNIT.xml", file=sys.stderr)
        return 2
    try:
        cases = ET.parse(sys.argv[1]).getroot().iter("testcase")
    except (OSError, ET.ParseError) as e:
        print(f"test-summary.py: cannot read {sys.argv[1]}: {e}", file=sys.stderr)
        return 2
    passed, part_skipped, skipped, failed = [], [], [], []
    for case in cases:
        name, status = case.get("name"), case.get("status")
        out = case.findtext("system-out")
        if status == "run":
            passed.append(name)
            parts = reason_lines(out, "SKIPPED PART [")
            if parts:
                part_skipped.append((name, parts))
        elif status in ("notrun", "disabled") or case.find("skipped") is not None:
            lines = reason_lines(out, "SKIPPED [")
            marker = case.find("skipped")
            skipped.append((name, lines[0] if lines else marker.get("message", "") if marker is not None else ""))
        else:
            failed.append(name)
    total = len(passed) + len(skipped) + len(failed)
    print()
    print(f"tvie tests: {total} entries: {len(passed)} ran and passed"
          f"{f' ({len(part_skipped)} with a part skipped)' if part_skipped else ''}, {len(skipped)} skipped, "
          f"{len(failed)} failed")
    if skipped:
        print(f"skipped ({len(skipped)}), each with its reason:")
        for name, why in skipped:
            print(f"  {why if why.startswith('SKIPPED') else f'SKIPPED [{name}]: {why}'}")
    if part_skipped:
        print(f"passed with a part skipped ({len(part_skipped)}):")
        for name, parts in part_skipped:
            for line in parts:
                print(f"  {line}")
    if failed:
        print(f"failed ({len(failed)}):")
        for name in failed:
            print(f"  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
