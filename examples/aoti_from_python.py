"""Compiles a model ahead of time for `tvie infer --aoti`: torch.export, then AOTInductor, into one .pt2 package.

    python3 examples/aoti_from_python.py /tmp/net.pt2 [--twin /tmp/net.pt] [--device cuda] [--dtype bf16]
    build/bin/tvie infer --aoti /tmp/net.pt2 --input-shape 3,32,32 --batch 1,8,64

The model is examples/torchscript_from_python.py's classifier (images [B, 3, 32, 32] -> logits [B, 10]), its
weights drawn with seed 0, exported with a dynamic batch (1 .. 4096) in eval mode (BatchNorm's running statistics).
The package's metadata carries its forward FLOPs per sample (tvie.forward_flops_per_sample: torch.utils.flop_counter
over one sample, 2 per multiply-add), so that tvie reports the run's FLOP/s and fraction of the card, and its
parameter count (tvie.parameters: its constants hold BatchNorm's running statistics too). --twin also
saves the same weights as TorchScript, for comparing the two paths on one model. Compiling takes a minute or two."""
import argparse
import os
import sys

import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchscript_from_python import Net  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="the .pt2 file to write")
    parser.add_argument("--twin", help="also save the same model as TorchScript here")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: the device the package is compiled for")
    parser.add_argument("--dtype", default="fp32", choices=sorted(DTYPES), help="the weights' and inputs' dtype")
    args = parser.parse_args()
    torch.manual_seed(0)
    net = Net().eval().to(device=args.device, dtype=DTYPES[args.dtype])
    sample = torch.randn(2, 3, 32, 32, device=args.device, dtype=DTYPES[args.dtype])
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net(sample[:1])
    flops = counter.get_total_flops()
    batch = torch.export.Dim("batch", min=1, max=4096)
    # While Inductor compiles, oneDNN and NNPACK are off: ATen's choice between them and its own convolution
    # depends on the batch (>= 16), and Inductor would guard the package's batch on that choice (2 .. 15 from a
    # sample of 2). The package calls ATen's convolution, which chooses its kernel per call when it runs.
    with torch.no_grad(), torch.backends.mkldnn.flags(enabled=False), torch.backends.nnpack.flags(enabled=False):
        program = torch.export.export(net, (sample,), dynamic_shapes={"x": {0: batch}})
        path = torch._inductor.aoti_compile_and_package(
            program, package_path=args.package,
            # A dynamic size is exported as >= 2 (sizes 0 and 1 are specialised): the generated kernels hold for
            # a batch of 1, and the runtime checks (AOTI_RUNTIME_CHECK_INPUTS, which tvie sets) must accept it.
            inductor_configs={"aot_inductor.check_lowerbound": False, "aot_inductor.metadata": {
                "tvie.forward_flops_per_sample": str(flops),
                "tvie.parameters": str(sum(p.numel() for p in net.parameters()))}})
    print(f"saved {path} ({flops / 1e6:.1f} MFLOP per sample)")
    if args.twin:
        torch.jit.save(torch.jit.script(net), args.twin)
        print(f"saved {args.twin}")


if __name__ == "__main__":
    main()
