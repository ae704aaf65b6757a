#!/usr/bin/env python3
"""The index of docs/results/ by question: writes the block between the index markers of docs/results/README.md,
every file of the folder's machine folders (cpu-KIND/, gpu-CARD/) and generated examples (plan-example/,
tutorial/) under the question it answers (the first rule whose pattern matches its path), so that none is linked
from nowhere. --check: exit 1 when the block is not what this script would write, a file matches no rule, or a
file lies outside a folder of the layout (lint runs it)."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
folder = os.path.join(root, "docs", "results")
readme = os.path.join(folder, "README.md")
# The folders: one per kind of CPU and per GPU card that made results, and the generated examples.
layout = re.compile(r"^(cpu-(avx2|avx512|avx512-no-bf16|avx512-amx)|gpu-[a-z0-9-]+|plan-example|tutorial)/[^/]+$")
# (question, pattern on the path below docs/results/); a file goes under the first that matches.
rules = [
    ("How much more memory does training take than inference, and why?",
     r"/compare-|^tutorial/|/llama-3-8b-train-vs-infer"),
    ("What do training's precisions, checkpointing and accumulation change?", r"^cpu-[\w-]+/train-"),
    ("What does each inference precision and batch cost?", r"/infer-(?!slices)"),
    ("How does a served model behave under load?", r"/serve-"),
    ("What does generation (prefill, decoding, the KV cache) cost?", r"/decode-"),
    ("What is the largest batch that fits?", r"/max-batch-"),
    ("How are models too big for the machine measured (slices)?", r"slices-|/train-llama|/llama-3-8b-table"),
    ("What does data-parallel training add?", r"/launch-|/allreduce"),
    ("Which card, how many, at what cost (tvie plan)?", r"^plan-example/|/plan-|/calibration-|/host-projection"),
    ("How close is the memory prediction?", r"/predicted-vs-measured"),
    ("Has every CUDA path run, and what did the GPU check see?", r"^gpu-[\w-]+/"),
    ("Can the tests fail, and what does bad input do?",
     r"^cpu-[\w-]+/(bad-inputs|mutants|sanitize|ci-times|bench-overhead|gpu-check|suite-)"),
]
begin = "<!-- index: every file of this folder by question (scripts/results-index.py) -->"
end = "<!-- end index -->"


def block():
    names = sorted(os.path.relpath(os.path.join(d, n), folder) for d, _, files in os.walk(folder) for n in files
                   if os.path.join(d, n) != readme)
    groups = {q: [] for q, _ in rules}
    lost = [n for n in names if not layout.match(n)]
    for name in names:
        if not layout.match(name):
            continue
        for question, pattern in rules:
            if re.search(pattern, name):
                groups[question].append(name)
                break
        else:
            lost.append(name)
    lines = [begin, ""]
    for question, files in groups.items():
        if not files:
            continue
        lines.append(f"- **{question}**")
        stems = {}
        for n in files:
            stem, ext = os.path.splitext(n)
            stems.setdefault(stem, []).append((ext[1:], n))
        for stem, forms in stems.items():
            lines.append(f"  - {stem}: " + " ".join(f"[{ext}]({n})" for ext, n in forms))
    lines += ["", end]
    return "\n".join(lines), lost


text = open(readme).read()
new, lost = block()
for name in lost:
    where = "answers none of scripts/results-index.py's questions" if layout.match(name) else \
        "lies outside the layout (cpu-KIND/, gpu-CARD/, plan-example/, tutorial/)"
    print(f"docs/results/{name}: {where}")
current = re.search(re.escape(begin) + ".*?" + re.escape(end), text, re.S)
if "--check" in sys.argv:
    if lost or not current or current.group(0) != new:
        print("docs/results/README.md: the index is not current: run scripts/results-index.py")
        sys.exit(1)
    sys.exit(0)
if lost:
    sys.exit(1)
if current:
    text = text[:current.start()] + new + text[current.end():]
else:
    first = text.index("\n## ")
    text = text[:first] + "\n\n## Index by question\n\n" + new + "\n" + text[first:]
open(readme, "w").write(text)
