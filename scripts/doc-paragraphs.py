#!/usr/bin/env python3
"""The docs read as a manual: no prose paragraph (or list item) of README.md, examples/README.md, docs/ or
docs/results/ over LIMIT characters (default 1,200; code blocks and tables aside). Prints each one found as
FILE:LINE LENGTH and exits 1 when there is one. Used by scripts/lint.sh."""
import glob
import os
import re
import sys

limit = int(sys.argv[1]) if len(sys.argv) > 1 else 1200
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
files = ["README.md", "examples/README.md"] + sorted(glob.glob("docs/*.md", root_dir=root)) + sorted(
    glob.glob("docs/results/*.md", root_dir=root))
found = 0
for name in files:
    with open(os.path.join(root, name), encoding="utf-8") as f:
        text = f.read()
    # Code blocks become blank lines (their line numbers kept).
    text = re.sub(r"```.*?```", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    paragraph, start = [], 0

    def flush():
        global found
        joined = " ".join(paragraph)
        if len(joined) > limit:
            print(f"{name}:{start} {len(joined)} characters: {joined[:60]}...")
            found += 1

    for number, line in enumerate(text.split("\n"), 1):
        stripped = line.strip()
        is_item = re.match(r"\s*(- |\d+\. )", line) is not None
        if not stripped or stripped.startswith("|") or line.startswith("#") or is_item:
            flush()
            paragraph, start = ([line], number) if is_item else ([], number + 1)
            continue
        if not paragraph:
            start = number
        paragraph.append(line)
    flush()
sys.exit(1 if found else 0)
