#!/usr/bin/env python3
"""The layer rule of docs/architecture.md, checked: every #include of every file of lib/ against the table of
layers on that page (lowest first; a layer's folder and its public headers). A file may include headers of its
own layer and of the layers below it. Prints each include that goes up, FILE:LINE, and exits 1 when there is one;
exits 2 when a file or header belongs to no layer (the table wants a row or a name). Used by scripts/lint.sh."""
import os
import re
import sys

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
table = re.findall(r"^\| (\w+) \| (lib/[\w/]+) \| ([\w ]+) \|$", open(os.path.join(root, "docs/architecture.md")).read(),
                   re.M)
if not table:
    sys.exit("layers: no table of layers in docs/architecture.md")
order = [layer for layer, _, _ in table]
folder_layer = {folder: layer for layer, folder, _ in table}
header_layer = {name: layer for layer, _, names in table for name in names.split()}


def layer_of(rel):
    m = re.match(r"lib/include/tvie/(\w+)\.hpp(\.in)?$", rel)
    if m:
        return header_layer.get(m.group(1))
    for folder, layer in folder_layer.items():
        if rel.startswith(folder + "/"):
            return layer
    return None


files = []
for top in ("lib/include/tvie", "lib/src", "lib/cli"):
    for dirpath, _, names in os.walk(os.path.join(root, top)):
        files += [os.path.relpath(os.path.join(dirpath, n), root) for n in names if n.endswith((".hpp", ".cpp", ".in"))]
unmapped = [f for f in sorted(files) if layer_of(f) is None and not f.endswith("catalog_data.cpp.in")]
for f in unmapped:
    print(f"{f}: in no layer of docs/architecture.md's table")
wrong = 0
include = re.compile(r'\s*#\s*include\s+[<"](?:tvie/(\w+)\.hpp|(\w+)/[\w.]+)[>"]')
for f in sorted(files):
    mine = layer_of(f) or ("projection" if f.endswith("catalog_data.cpp.in") else None)
    if mine is None:
        continue
    for number, line in enumerate(open(os.path.join(root, f)), 1):
        m = include.match(line)
        if not m:
            continue
        theirs = header_layer.get(m.group(1)) if m.group(1) else folder_layer.get("lib/src/" + m.group(2))
        if theirs is not None and order.index(theirs) > order.index(mine):
            print(f"{f}:{number}: {mine} includes {line.strip()[len('#include '):]} ({theirs})")
            wrong += 1
sys.exit(2 if unmapped else 1 if wrong else 0)
