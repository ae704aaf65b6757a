#!/usr/bin/env python3
"""What one CPU kernel allocates and frees inside its forward and its backward: the measurements behind the
predicted ledger's scratch rules (lib/src/predict/forward_trace.cpp, docs/prediction.md).

LibTorch's profiler records every allocation and free of its CPU allocator ([memory] events); this script runs
one op (a Linear or a Conv2d, bias-free for the convolution as tvie's models have them) at the shapes given,
warms it up twice, then profiles one forward and one backward and prints each one's sequence of allocations
(+bytes) and frees (-bytes), and its peak above what it leaves behind (forward: the output; backward: the
gradients), which is what the trace's `end_op(..., scratch)` and forward transients model. The kernels, and
their scratch, depend on the CPU (oneDNN's brgemm, AMX or AVX2 kernels; ATen's im2col), the dtype and the
threads, so every line names them.

The profiler records the allocations of the thread that calls the op, not those its intra-op worker threads make
inside a parallel loop (LibTorch's CPU flash attention: each thread's bf16 products allocate their own
accumulators; at 4 threads the profiler showed a quarter of them). A oneDNN primitive's scratchpad is allocated by
the caller, so the Linear and Conv2d figures here are whole; for kernels that allocate in their threads, read the
memory timeline of `tvie train --json` (tvie's counting allocator sees every thread).

Run it with the Python of the set-up's virtual environment (it needs torch):

  ~/.cache/tvie/venv-torch-2.14.1/bin/python scripts/op-scratch.py linear --rows 8 --in 64 --out 128 --dtype bf16
  ~/.cache/tvie/venv-torch-2.14.1/bin/python scripts/op-scratch.py conv2d --batch 8 --cin 8 --cout 16 --kernel 3 \\
      --stride 2 --hw 16 --dtype bf16 --threads 1,2,4
  add --json to print one JSON object per run instead.
"""
import argparse
import json
import sys

try:
    import torch
    from torch.profiler import ProfilerActivity, profile
except ImportError:
    sys.exit("scripts/op-scratch.py: needs torch: run it with the set-up's virtual environment's python "
             "(~/.cache/tvie/venv-torch-<version>/bin/python)")

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def cpu_isa():
    """The ISA features that decide which kernels run (as tvie's reports name them)."""
    try:
        flags = next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split()
    except (OSError, StopIteration):
        return "unknown"
    found = [f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in flags]
    return " ".join(found) or "none of avx2/avx512f/avx512_bf16/amx_bf16"


def allocations(fn):
    """The sizes of the allocations (+) and frees (-) fn makes, in order."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = prof.profiler.kineto_results.events()
    return [e.nbytes() for e in sorted((e for e in events if e.name() == "[memory]"), key=lambda e: e.start_ns())]


def peak_above_end(sequence):
    """The highest the running total goes above where it ends (what the op leaves alive)."""
    total = peak = 0
    for b in sequence:
        total += b
        peak = max(peak, total)
    return peak - total, total


def measure(args, threads):
    torch.set_num_threads(threads)
    dtype = DTYPES[args.dtype]
    if args.op == "linear":
        x = torch.randn(args.rows, args.in_features, dtype=dtype, requires_grad=not args.no_input_grad)
        module = torch.nn.Linear(args.in_features, args.out_features, bias=not args.no_bias).to(dtype)
        shape = f"linear rows {args.rows} in {args.in_features} out {args.out_features}"
    else:
        x = torch.randn(args.batch, args.cin, args.hw, args.hw, dtype=dtype, requires_grad=not args.no_input_grad)
        module = torch.nn.Conv2d(args.cin, args.cout, args.kernel, args.stride, args.kernel // 2, bias=False)
        module = module.to(dtype)
        shape = (f"conv2d batch {args.batch} {args.cin}->{args.cout} kernel {args.kernel} stride {args.stride} "
                 f"{args.hw}x{args.hw}")
    for _ in range(2):  # the first calls create the kernels' caches: not part of a step's scratch
        module(x).float().sum().backward()
    module.zero_grad(set_to_none=True)
    x.grad = None
    out = {}
    forward = allocations(lambda: out.setdefault("y", module(x)))
    y = out["y"]
    grad = torch.ones_like(y)
    backward = allocations(lambda: y.backward(grad))
    f_peak, f_left = peak_above_end(forward)
    b_peak, b_left = peak_above_end(backward)
    return {
        "op": shape, "dtype": args.dtype, "threads": threads, "isa": cpu_isa(), "torch": torch.__version__,
        "input_bytes": x.numel() * x.element_size(), "output_bytes": y.numel() * y.element_size(),
        "weight_bytes": module.weight.numel() * module.weight.element_size(),
        "forward": {"sequence": forward, "left_bytes": f_left, "peak_above_left_bytes": f_peak},
        "backward": {"sequence": backward, "left_bytes": b_left, "peak_above_left_bytes": b_peak},
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("op", choices=["linear", "conv2d"])
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    p.add_argument("--threads", default="1", help="intra-op threads, comma-separated (default 1)")
    p.add_argument("--rows", type=int, default=8, help="linear: rows of the input (batch x positions)")
    p.add_argument("--in", dest="in_features", type=int, default=64, help="linear: input features")
    p.add_argument("--out", dest="out_features", type=int, default=128, help="linear: output features")
    p.add_argument("--no-bias", action="store_true", help="linear: without a bias")
    p.add_argument("--batch", type=int, default=8, help="conv2d: images")
    p.add_argument("--cin", type=int, default=8, help="conv2d: input channels")
    p.add_argument("--cout", type=int, default=8, help="conv2d: output channels")
    p.add_argument("--kernel", type=int, default=3, help="conv2d: kernel size (padding kernel/2)")
    p.add_argument("--stride", type=int, default=1, help="conv2d: stride")
    p.add_argument("--hw", type=int, default=16, help="conv2d: input height = width")
    p.add_argument("--no-input-grad", action="store_true", help="the input needs no gradient (a model's first op)")
    p.add_argument("--json", action="store_true", help="one JSON object per run")
    args = p.parse_args()
    try:
        threads = [int(t) for t in args.threads.split(",")]
    except ValueError:
        p.error(f"--threads: got '{args.threads}'; accepted: integers >= 1, comma-separated")
    if any(t < 1 for t in threads):
        p.error(f"--threads: got '{args.threads}'; accepted: integers >= 1, comma-separated")
    sizes = [args.rows, args.in_features, args.out_features, args.batch, args.cin, args.cout, args.kernel,
             args.stride, args.hw]
    if any(v < 1 for v in sizes):
        p.error("--rows, --in, --out, --batch, --cin, --cout, --kernel, --stride, --hw: accepted: integers >= 1")
    for t in threads:
        r = measure(args, t)
        if args.json:
            print(json.dumps(r))
            continue
        print(f"{r['op']}, {r['dtype']}, {t} thread(s); CPU {r['isa']}; torch {r['torch']}")
        print(f"  input {r['input_bytes']} B, output {r['output_bytes']} B, weight {r['weight_bytes']} B")
        for phase in ("forward", "backward"):
            ph = r[phase]
            print(f"  {phase:8}: peak {ph['peak_above_left_bytes']} B above the {ph['left_bytes']} B it leaves; "
                  f"allocations {ph['sequence']}")


if __name__ == "__main__":
    main()
