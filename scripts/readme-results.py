#!/usr/bin/env python3
"""Fills README.md's result blocks from docs/results/ (no figure in README is typed by hand).

A block is marked `<!-- results:NAME ... -->` ... `<!-- end results:NAME -->` and receives
docs/results/NAME.txt (a code block) or docs/results/NAME.md (as is)."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
readme = root / "README.md"
text = readme.read_text()


def fill(match):
    name = match.group(1)
    txt, md = root / "docs/results" / f"{name}.txt", root / "docs/results" / f"{name}.md"
    if not md.exists() and not txt.exists():  # not made yet (e.g. scripts/ci-times.sh): left as it is
        print(f"README.md: no docs/results/{name}.txt or .md yet; block left as it is", file=sys.stderr)
        return match.group(0)
    body = md.read_text().rstrip() if md.exists() else "```\n" + txt.read_text().rstrip() + "\n```"
    return f"{match.group(0).splitlines()[0]}\n{body}\n<!-- end results:{name} -->"


new = re.sub(r"<!-- results:([\w.-]+)[^\n]*-->\n.*?<!-- end results:\1 -->", fill, text, flags=re.S)
readme.write_text(new)
print("README.md result blocks filled", file=sys.stderr)
