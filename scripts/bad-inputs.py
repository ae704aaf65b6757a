#!/usr/bin/env python3
"""Runs every row of tests/bad_inputs.txt against build/bin/tvie and writes docs/results/cpu-KIND/bad-inputs.md: per row,
the exit code, the lines printed, the line itself, whether a file was written, and whether the promise held (exit 2,
one line containing every needle, no file). The same rows are asserted by tests/test_cli.cpp.

Usage: scripts/bad-inputs.py [BUILD_DIR] > docs/results/cpu-KIND/bad-inputs.md (KIND: scripts/common.sh, cpu_kind)"""
import os
import pathlib
import platform
import shlex
import subprocess
import sys
import tempfile

root = pathlib.Path(__file__).resolve().parent.parent
build = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else root / "build"
tvie = build / "bin" / "tvie"


def cpu_model():
    for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


rows, section = [], ""
for line in (root / "tests/bad_inputs.txt").read_text().splitlines():
    if line.startswith("# ") and not line.startswith("# The ") and "tests/" not in line and "-q where" not in line:
        section = line[2:].rstrip(".")
        continue
    if not line or line.startswith("#"):
        continue
    args, *needles = line.split("\t")
    rows.append((section, args, needles))

commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "lib", "tests/bad_inputs.txt"],
                       capture_output=True, text=True).stdout.strip()
print("# Bad input on the command line: every case tried, and what the tool did\n")
print(f"Made by `scripts/bad-inputs.py` from `tests/bad_inputs.txt` (the rows `tests/test_cli.cpp` asserts), on "
      f"{cpu_model()}, {os.cpu_count()} cores, tvie at {commit.stdout.strip() or 'unknown commit'}{' with uncommitted changes' if dirty else ''}. Each row runs "
      "`build/bin/tvie ARGS --json FILE`; the promise: exit code 2, one line naming the option and what is accepted, "
      "no file.\n")
held, current = 0, None
for section, args, needles in rows:
    if section != current:
        current = section
        print(f"\n## {section}\n")
        print("| Command | Exit | Lines | What it printed | File | Promise |")
        print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        out = pathlib.Path(d) / "out.json"
        r = subprocess.run(f"{shlex.quote(str(tvie))} {args} --json {shlex.quote(str(out))}", shell=True,
                           capture_output=True, text=True, timeout=600)
        text = r.stdout + r.stderr
        lines = text.count("\n")
        wrote = any(pathlib.Path(d).iterdir())
    ok = r.returncode == 2 and lines == 1 and not wrote and all(n in text for n in needles)
    held += ok
    shown = text.strip().replace("|", "\\|").replace("\n", " / ")
    print(f"| `tvie {args}` | {r.returncode} | {lines} | {shown} | {'written' if wrote else 'none'} | "
          f"{'held' if ok else 'BROKEN'} |")
print(f"\n{held} of {len(rows)} cases as promised.")
print("\nNot in the table (each has a test of its own in `tests/test_cli.cpp`): an output that is an input or "
      "another output, a FIFO or a device as an output, a symbolic link written through; `--config` files that are "
      "a directory, over 1 MiB or nested deeper than 16; a `tvie launch` stopped by SIGTERM, SIGINT or SIGKILL; a "
      "training run whose loss becomes inf or NaN (its report written, exit 3).")
sys.exit(0 if held == len(rows) else 1)
