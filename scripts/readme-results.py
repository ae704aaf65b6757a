#!/usr/bin/env python3
"""Fills the result blocks of docs/results/README.md and docs/building.md from docs/results/ (no figure there is
typed by hand).

A block is marked `<!-- results:NAME ... -->` ... `<!-- end results:NAME -->` and receives
docs/results/NAME.txt (a code block) or docs/results/NAME.md (as is), NAME a path below docs/results/."""
import pathlib
import re
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
pages = [root / "docs/results/README.md", root / "docs/building.md"]


def fill(match):
    name = match.group(1)
    txt, md = root / "docs/results" / f"{name}.txt", root / "docs/results" / f"{name}.md"
    if not md.exists() and not txt.exists():  # not made yet (e.g. scripts/ci-times.sh): left as it is
        print(f"no docs/results/{name}.txt or .md yet; block left as it is", file=sys.stderr)
        return match.group(0)
    body = md.read_text().rstrip() if md.exists() else "```\n" + txt.read_text().rstrip() + "\n```"
    return f"{match.group(0).splitlines()[0]}\n{body}\n<!-- end results:{name} -->"


for page in pages:
    text = page.read_text()
    new = re.sub(r"<!-- results:([\w./-]+)[^\n]*-->\n.*?<!-- end results:\1 -->", fill, text, flags=re.S)
    page.write_text(new)
    print(f"{page.relative_to(root)}: result blocks filled", file=sys.stderr)

# The index of docs/results/ by question, with every file the runs above may have added.
subprocess.run([sys.executable, str(root / "scripts" / "results-index.py")], check=True)
