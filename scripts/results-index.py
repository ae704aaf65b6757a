#!/usr/bin/env python3
"""The index of docs/results/ by question: writes the block between the index markers of docs/results/README.md,
every file of the folder under the question it answers (the first rule whose pattern matches its name), so that
none is linked from nowhere. --check: exit 1 when the block is not what this script would write, or a file
matches no rule (lint runs it)."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
folder = os.path.join(root, "docs", "results")
readme = os.path.join(folder, "README.md")
# (question, name pattern); a file goes under the first that matches.
rules = [
    ("How much more memory does training take than inference, and why?",
     r"^(cpu|gpu-h200)-compare-|^why-training-|^cpu-llama-3-8b-train-vs-infer"),
    ("What do training's precisions, checkpointing and accumulation change?", r"^cpu-train-"),
    ("What does each inference precision and batch cost?", r"^(cpu|gpu-h200)-infer-(?!slices)"),
    ("How does a served model behave under load?", r"^cpu-serve-"),
    ("What does generation (prefill, decoding, the KV cache) cost?", r"^(cpu|gpu-h200)-decode-"),
    ("What is the largest batch that fits?", r"-max-batch-"),
    ("How are models too big for the machine measured (slices)?",
     r"-slices-|^gpu-h200-(train-llama|llama)|^cpu-infer-slices"),
    ("What does data-parallel training add?", r"^cpu-launch-|-allreduce"),
    ("Which card, how many, at what cost (tvie plan)?", r"^plan-|^(cpu|gpu-h200)-plan-|-calibration-|host-projection"),
    ("How close is the memory prediction, kernel by kernel?",
     r"predicted-vs-measured|scratch|onednn-bookings|predicted-working-set"),
    ("Has every CUDA path run, and what did the GPU check see?", r"^gpu-h200-"),
    ("Can the tests fail, and what does bad input do?", r"^cpu-(bad-inputs|mutants|sanitize|ci-times|bench-overhead|gpu-check)"),
]
begin = "<!-- index: every file of this folder by question (scripts/results-index.py) -->"
end = "<!-- end index -->"


def block():
    names = sorted(n for n in os.listdir(folder) if n != "README.md")
    groups = {q: [] for q, _ in rules}
    lost = []
    for name in names:
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
    print(f"docs/results/{name}: answers none of scripts/results-index.py's questions")
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
