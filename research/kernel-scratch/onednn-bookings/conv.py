#!/usr/bin/env python3
"""What a convolution holds in LibTorch 2.14 on oneDNN, from oneDNN's own bookings (the probe, build.sh).

LibTorch (aten/src/ATen/native/mkldnn/Conv.cpp) runs a non-channels-last convolution through ideep, which asks
oneDNN for the layouts it wants (format "any") and holds, per primitive:
  - forward: the input reordered into oneDNN's layout (unless plain), the weights likewise, the output in oneDNN's
    layout and the scratchpad; then mkldnn_to_dense copies the output to NCHW. A channels-last output is a public
    layout that ideep's to_public keeps: the dense tensor comes back channels-last and .contiguous() copies it once
    more (three output-sized tensors at that moment);
  - backward data: the output's gradient and the weights reordered (unless plain), the input's gradient in oneDNN's
    layout and the scratchpad; then the same copy to NCHW;
  - backward weights (the input's gradient alive): the input and the output's gradient reordered (unless plain), the
    weight gradient in oneDNN's layout and the scratchpad; then its copy to OIHW.
The bytes above what each phase leaves (forward: its output; backward: the input's and the weights' gradients) are
what research/kernel-scratch/conv_scratch_table.cpp measures. Usage:

  conv.py check TABLE PROBE [f32]   the structure above on the probe's bookings against a committed measured table
                                    (research/kernel-scratch/results/*-conv-scratch-*.md, from research/kernel-scratch/conv_scratch_table.cpp); run
                                    under the same ONEDNN_MAX_CPU_ISA, with TVIE_FORCE_AMX=1 to stand for a CPU with
                                    avx512_bf16 (the AMD EPYC's table, under ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16).
                                    Prints every row that differs and "N of M equal"; exit 1 if any differs.
  conv.py amx TABLE PROBE           the same shapes as TABLE with oneDNN's AMX kernels (TVIE_FORCE_AMX=1): a
                                    Markdown table of what each convolution would hold, beside what tvie's
                                    prediction counted on AMX until 2026-12-04 (the input's copy in backward; since,
                                    it asks LibTorch's own oneDNN: lib/src/predict/onednn_bookings.cpp).
"""
import os
import re
import sys

from probe_run import run_probe

ROW = re.compile(r"\| (\d+) -> (\d+), (\d+)x\d+ stride (\d+), (\d+)x\d+( \(no input gradient\))? \| (\d+) \| (\d+) \|"
                 r"[^|]*\| ([^|]*) \| ([^|]*) \|")


def measured_rows(table):
    """(batch, cin, cout, kernel, stride, hw, input_grad, threads, forward, backward) per row of a measured table."""
    rows = []
    for line in open(table):
        m = ROW.match(line)
        if not m:
            continue
        cin, cout, k, s, hw = map(int, m.group(1, 2, 3, 4, 5))

        def measured(cell):
            cell = cell.strip()
            return int(cell.split()[0]) if cell.endswith("=") else int(cell.split("/")[1].split()[0])

        rows.append((int(m.group(7)), cin, cout, k, s, hw, m.group(6) is None, int(m.group(8)),
                     measured(m.group(9)), measured(m.group(10))))
    return rows


def probe(path, dtype, threads, shapes, force_amx):
    out = run_probe(path, dtype, [" ".join(map(str, s)) for s in shapes], threads,
                    {"TVIE_FORCE_AMX": "1"} if force_amx else None)
    result = {}
    for line in out:
        head, *parts = line.split(" | ")
        key = tuple(map(int, head.split()))
        if parts[0].startswith("error"):
            raise SystemExit(f"conv.py: oneDNN has no convolution for {key}: {parts[0]}")
        d = {}
        for part in parts:
            tokens = part.split()
            phase = tokens[0]
            d[phase] = tokens[1]
            for t in tokens[2:]:
                name, value = t.split("=")
                # (bytes, plain layout, channels-last layout)
                d[phase + name] = (int(value.rstrip("pc")), value.endswith("p"), value.endswith("c"))
        result[key] = d
    return result


def structure(batch, cin, cout, k, s, hw, input_grad, d, element):
    """Forward and backward bytes above what each phase leaves, from the bookings (see the module's doc)."""
    o = (hw + 2 * (k // 2) - k) // s + 1
    x, y, w = batch * cin * hw * hw * element, batch * cout * o * o * element, cin * cout * k * k * element
    reordered = lambda t: 0 if t[1] else t[0]
    dense = lambda t, plain: t[0] + plain + (plain if t[2] else 0)  # mkldnn_to_dense (+ .contiguous())
    forward = max(reordered(d["Fx"]) + reordered(d["Fw"]) + d["Fy"][0] + d["Fs"][0], dense(d["Fy"], y)) - y
    weights = reordered(d["Wx"]) + reordered(d["Wdy"]) + d["Wdw"][0] + d["Ws"][0]
    weights_dense = dense(d["Wdw"], w)
    if input_grad:
        data = reordered(d["Ddy"]) + reordered(d["Dw"]) + d["Ddx"][0] + d["Ds"][0]
        peak = max(data, dense(d["Ddx"], x), x + weights, x + weights_dense) - x
    else:
        peak = max(weights, weights_dense)
    return forward, peak - w


def check(table, path, dtype):
    rows = measured_rows(table)
    element = 4 if dtype == "f32" else 2
    force_amx = os.environ.get("TVIE_FORCE_AMX") is not None
    equal = 0
    for threads in sorted({r[7] for r in rows}):
        subset = [r for r in rows if r[7] == threads]
        bookings = probe(path, dtype, threads, sorted({r[:6] for r in subset}), force_amx)
        for r in subset:
            d = bookings[r[:6]]
            f, b = structure(*r[:7], d, element)
            if (f, b) == (r[8], r[9]):
                equal += 1
            else:
                print(f"{r[:6]} threads {threads}: forward {f} / {r[8]}, backward {b} / {r[9]} "
                      f"({d['F']}, {d['D']}, {d['W']})")
    print(f"{equal} of {len(rows)} equal")
    return 0 if equal == len(rows) else 1


def amx(table, path):
    rows = measured_rows(table)
    shapes = sorted({r[:7] + (r[7],) for r in rows}, key=lambda r: (r[1], r[2], r[3], r[4], r[5], r[0], r[7]))
    print("| convolution | batch | threads | kernels (forward, backward data, backward weights) | forward | backward |"
          " tvie counted until 2026-12-04 (forward, backward) |")
    print("|---|---|---|---|---|---|---|")
    by_threads = {}
    for threads in sorted({r[7] for r in shapes}):
        by_threads[threads] = probe(path, "bf16", threads, sorted({r[:6] for r in shapes if r[7] == threads}), True)
    for batch, cin, cout, k, s, hw, input_grad, threads in shapes:
        d = by_threads[threads][(batch, cin, cout, k, s, hw)]
        f, b = structure(batch, cin, cout, k, s, hw, input_grad, d, 2)
        x = batch * cin * hw * hw * 2
        name = f"{cin} -> {cout}, {k}x{k} stride {s}, {hw}x{hw}" + ("" if input_grad else " (no input gradient)")
        kernels = ", ".join(d[p].replace("avx10_1_512_amx", "amx") for p in ("F", "D", "W"))
        print(f"| {name} | {batch} | {threads} | {kernels} | {f} | {b} | 0, {x} |")
    return 0


def main(argv):
    if len(argv) >= 4 and argv[1] == "check":
        return check(argv[2], argv[3], argv[4] if len(argv) > 4 else "bf16")
    if len(argv) == 4 and argv[1] == "amx":
        return amx(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
