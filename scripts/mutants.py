#!/usr/bin/env python3
"""The mutation run of scripts/mutants.sh: applies each mutant of a list to a scratch copy of the tree, builds it
incrementally, and runs the tests its record names and, where they miss it, the whole suite. Prints the table
(mutant, killed by which test, or SURVIVED) and writes it to --out.

A killing test is one that passed on the unmutated build and fails with the mutant: the named tests are run on the
unmutated build first, and a mutant killed only by a test that fails there too would not count.
"""
import argparse
import datetime
import os
import re
import signal
import subprocess
import sys
import time


class Mutant:
    def __init__(self, name, hint):
        self.name, self.hint, self.path = name, hint, None
        self.original, self.replacement = [], []


def parse(path):
    mutants, current = [], None
    with open(path) as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            if line.startswith("#") or not line.strip():
                continue
            if line.startswith("== "):
                name, _, hint = line[3:].partition(" | ")
                current = Mutant(name.strip(), hint.strip())
                mutants.append(current)
            elif current is None:
                sys.exit(f"{path}:{number}: a line before the first '== name | tests' record")
            elif line.startswith("@ "):
                current.path = line[2:].strip()
            elif line.startswith("- ") or line == "-":
                current.original.append(line[2:])
            elif line.startswith("+ ") or line == "+":
                current.replacement.append(line[2:])
            else:
                sys.exit(f"{path}:{number}: not a record line: {line!r}")
    for m in mutants:
        if not m.path or not m.original or not m.hint:
            sys.exit(f"{path}: mutant '{m.name}' needs a file (@), original lines (-) and tests to run first (| ...)")
    return mutants


def run(cmd, cwd, log):
    with open(log, "a") as out:
        out.write(f"\n$ {' '.join(cmd)}\n")
        out.flush()
        return subprocess.run(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT).returncode


def ctest(build, jobs, log, pattern=None):
    """Runs ctest (every entry, or those matching `pattern`); returns the names of the failed ones."""
    junit = os.path.join(build, "Testing", "mutants-junit.xml")
    if os.path.exists(junit):
        os.remove(junit)
    cmd = ["ctest", "-j", str(jobs), "--output-junit", junit, "--stop-on-failure"]
    if pattern:
        cmd += ["-R", pattern]
    run(cmd, build, log)
    import xml.etree.ElementTree as ET
    if not os.path.exists(junit):
        return ["(ctest wrote no report)"]
    failed = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        if case.get("status") not in ("run", "notrun", "disabled") and case.find("skipped") is None:
            failed.append(case.get("name"))
    return failed


def matching(build, pattern):
    out = subprocess.run(["ctest", "-N", "-R", pattern], cwd=build, capture_output=True, text=True).stdout
    return len(re.findall(r"Test +#\d+: ", out))


def update_table(path, rows, header):
    """Replaces the rows of `rows`' mutants in the table at `path` (a run of every mutant at a commit whose lib/ and
    tests/ the caller checked are this one's), recounts the verdicts, and adds a header line naming the rows rerun
    and when (the rest of the header, the first run's, stays)."""
    lines = open(path).read().rstrip("\n").split("\n")
    new = {name: f"| {name} | {where} | {verdict} |" for name, where, verdict in rows}
    found = set()
    for i, line in enumerate(lines):
        name = line[2:].split(" | ")[0] if line.startswith("| ") else None
        if name in new:
            lines[i] = new[name]
            found.add(name)
    missing = set(new) - found
    if missing:
        sys.exit(f"mutants: {sorted(missing)} not in {path}: run every mutant instead")
    table = [line for line in lines if line.startswith("| ") and not line.startswith("| mutant |")]
    survived = sum(1 for line in table if line.endswith("| SURVIVED |"))
    broken = sum(1 for line in table if "DOES NOT BUILD" in line)
    killed = len(table) - survived - broken
    rerun = header.split("\n")[0].replace("# scripts/mutants.sh at commit", "# rerun at commit")
    out, counted = [], False
    for line in lines:
        if line.startswith("# ") and " mutants killed, " in line:
            out.append(f"{rerun}: {', '.join(sorted(new))}")
            line, counted = f"# {killed} of {len(table)} mutants killed, {survived} survived, {broken} did not build", True
        out.append(line)
    if not counted:
        sys.exit(f"mutants: {path} has no count line")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    # Stopped (SIGTERM, SIGINT), the run still puts the mutated file back (the finally below).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    ap = argparse.ArgumentParser()
    ap.add_argument("--src", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--list", required=True)
    ap.add_argument("--only", default="", help="a regex: only the mutants whose name matches")
    ap.add_argument("--out", default="", help="write the table here (only for a run of every mutant)")
    ap.add_argument("--update", action="store_true",
                    help="with --only: replace the rows of the mutants run in the table --out holds, and say so")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--header", default="")
    a = ap.parse_args()
    mutants = parse(a.list)
    if a.only:
        mutants = [m for m in mutants if re.search(a.only, m.name)]
    log = os.path.join(a.build, "mutants.log")
    open(log, "w").close()
    # Every mutant's original text exactly once in its file, before anything runs.
    for m in mutants:
        text = open(os.path.join(a.src, m.path)).read()
        count = text.count("\n".join(m.original))
        if count != 1:
            sys.exit(f"mutants: '{m.name}': its original text is found {count} times in {m.path} (mend the record)")
    # The tests named first must match something, and pass on the unmutated build.
    for m in mutants:
        if matching(a.build, m.hint) == 0:
            sys.exit(f"mutants: '{m.name}': the pattern '{m.hint}' matches no ctest entry")
    # No groups: CMake's regular expressions take at most 9 of them.
    union = "|".join(sorted({m.hint for m in mutants}))
    named = matching(a.build, union)
    if named < max(matching(a.build, m.hint) for m in mutants):
        sys.exit(f"mutants: ctest -R '{union}' matches fewer entries than one of its parts")
    print(f"mutants: the named tests on the unmutated build ({named} entries)", flush=True)
    if run(["cmake", "--build", a.build, "--target", "tvie_tests", "-j", str(a.jobs)], a.src, log) != 0:
        sys.exit(f"mutants: the unmutated tree does not build (see {log})")
    baseline = ctest(a.build, a.jobs, log, union)
    if baseline:
        sys.exit(f"mutants: on the unmutated build these fail already: {baseline} (see {log})")
    rows, survived, broken = [], 0, 0
    for i, m in enumerate(mutants, 1):
        start = time.time()
        path = os.path.join(a.src, m.path)
        original = open(path).read()
        line = original[: original.index("\n".join(m.original))].count("\n") + 1
        try:
            with open(path, "w") as f:
                f.write(original.replace("\n".join(m.original), "\n".join(m.replacement), 1))
            if run(["cmake", "--build", a.build, "--target", "tvie_tests", "-j", str(a.jobs)], a.src, log) != 0:
                verdict, broken = "DOES NOT BUILD (mend the record)", broken + 1
            else:
                failed = ctest(a.build, a.jobs, log, m.hint)
                how = "named"
                if not failed:
                    failed, how = ctest(a.build, a.jobs, log), "whole suite"
                if failed:
                    verdict = f"killed by: {failed[0]}" + (f" (+{len(failed) - 1} more)" if len(failed) > 1 else "")
                    verdict += "" if how == "named" else " [whole suite]"
                else:
                    verdict, survived = "SURVIVED", survived + 1
        finally:
            with open(path, "w") as f:
                f.write(original)
        rows.append((m.name, f"{m.path}:{line}", verdict))
        print(f"[{i}/{len(mutants)}] {m.name} ({m.path}:{line}): {verdict} ({time.time() - start:.0f} s)", flush=True)
    run(["cmake", "--build", a.build, "--target", "tvie_tests", "-j", str(a.jobs)], a.src, log)  # unmutated again
    killed = len(rows) - survived - broken
    table = [a.header, f"# {killed} of {len(rows)} mutants killed, {survived} survived, {broken} did not build", "",
             "| mutant | where | verdict |", "|---|---|---|"]
    table += [f"| {n} | {w} | {v} |" for n, w, v in rows]
    text = "\n".join(table).lstrip("\n") + "\n"
    print()
    print(text)
    if a.out and not a.only:
        with open(a.out, "w") as f:
            f.write(text)
        print(f"mutants: wrote {a.out}")
    elif a.out and a.update:
        update_table(a.out, rows, a.header)
        print(f"mutants: updated {len(rows)} row(s) of {a.out}")
    return 1 if survived or broken else 0


if __name__ == "__main__":
    sys.exit(main())
