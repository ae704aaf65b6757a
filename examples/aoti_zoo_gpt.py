"""Compiles the zoo's gpt with tvie's own weights into an AOTInductor package, for `tvie infer --aoti`.

    build/bin/tvie train --model gpt --preset tiny --steps 200 --save-parameters /tmp/gpt.pt
    python3 examples/aoti_zoo_gpt.py /tmp/gpt.pt /tmp/gpt.pt2 --heads 4
    build/bin/tvie infer --aoti /tmp/gpt.pt2 --input-shape 32 --vocab 256 --batch 1,8,64

A Python twin of lib/src/models/model_gpt.cpp (GPT-2: pre-LayerNorm blocks, tanh GELU, tied head), its parameters
taken in order from the file `tvie train --save-parameters` wrote; the sizes follow from their shapes, except the
heads (the presets': tiny 4, small 8, gpt2-small 12). The package computes the same logits [B, S, V] as the zoo's
full-sequence forward (`tvie infer --model gpt`), so its row and eager's can be read side by side; its metadata
carries the parameters and the forward FLOPs per sample (torch.utils.flop_counter, 2 per multiply-add).
tests/test_examples.cpp compares the package's logits with tvie's own forward on the same weights."""
import argparse

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from aoti_export import DTYPES, compile_package, load_tvie_parameters


class Attention(torch.nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = torch.nn.Linear(h, 3 * h)
        self.c_proj = torch.nn.Linear(h, h)

    def forward(self, x):  # [B, S, h] -> [B, S, h]
        B, S, h = x.shape
        q, k, v = self.c_attn(x).split(h, dim=2)  # 3 x [B, S, h]
        q, k, v = (t.view(B, S, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))  # [B, a, S, d]
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [B, a, S, d]
        return self.c_proj(y.transpose(1, 2).contiguous().view(B, S, h))


class Block(torch.nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.ln_1 = torch.nn.LayerNorm(h)
        self.attn = Attention(h, heads)
        self.ln_2 = torch.nn.LayerNorm(h)
        self.c_fc = torch.nn.Linear(h, 4 * h)
        self.c_proj = torch.nn.Linear(4 * h, h)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class Gpt(torch.nn.Module):
    def __init__(self, vocab, context, h, layers, heads, tied):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab, h)
        self.wpe = torch.nn.Embedding(context, h)
        self.h = torch.nn.ModuleList([Block(h, heads) for _ in range(layers)])
        self.ln_f = torch.nn.LayerNorm(h)
        self.lm_head = None if tied else torch.nn.Linear(h, vocab, bias=False)

    def forward(self, idx):  # [B, S] token ids -> logits [B, S, V]
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return x @ self.wte.weight.t() if self.lm_head is None else self.lm_head(x)


def twin_of(tensors, heads):
    vocab, h = tensors[0].shape
    context = tensors[1].shape[0]
    per_block = 12  # ln_1 (2), c_attn (2), c_proj (2), ln_2 (2), c_fc (2), c_proj (2)
    layers = (len(tensors) - 4) // per_block
    tied = len(tensors) == 4 + per_block * layers
    if layers < 1 or len(tensors) - 4 - per_block * layers not in (0, 1) or h % heads:
        raise SystemExit(f"{len(tensors)} tensors of width {h} are not the zoo's gpt with {heads} heads")
    net = Gpt(vocab, context, h, layers, heads, tied)
    names = [n for n, _ in net.named_parameters()]
    if len(names) != len(tensors):
        raise SystemExit(f"the twin has {len(names)} parameters, the file {len(tensors)}")
    with torch.no_grad():
        for p, t in zip(net.parameters(), tensors):
            if p.shape != t.shape:
                raise SystemExit(f"shape {tuple(t.shape)} where the twin has {tuple(p.shape)}")
            p.copy_(t)
    return net, context


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parameters", help="the file `tvie train --model gpt --save-parameters` wrote")
    parser.add_argument("package", help="the .pt2 file to write")
    parser.add_argument("--heads", type=int, required=True, help="attention heads (tiny 4, small 8, gpt2-small 12)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: the device the package is compiled for")
    parser.add_argument("--dtype", default="fp32", choices=sorted(DTYPES), help="the weights' dtype")
    parser.add_argument("--max-batch", type=int, default=1024, help="the largest batch the package accepts")
    args = parser.parse_args()
    net, context = twin_of(load_tvie_parameters(args.parameters), args.heads)
    net = net.eval().to(device=args.device, dtype=DTYPES[args.dtype])
    vocab = net.wte.weight.shape[0]
    sample = torch.randint(0, vocab, (2, context), device=args.device)
    # Attention through its math path while counting: the CPU's fused attention is an operator the counter does
    # not know. Counted in full, the masked half included, as tvie's analytic count does.
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as counter:
        net(sample[:1])
    flops = counter.get_total_flops()
    path = compile_package(net, sample, "idx", args.package, args.max_batch, flops)
    params = sum(p.numel() for p in net.parameters())
    print(f"saved {path}: {len(net.h)} blocks, width {net.wte.weight.shape[1]}, vocabulary {vocab}, context "
          f"{context}, {params:,} parameters, {flops / 1e6:.1f} MFLOP per sample")


if __name__ == "__main__":
    main()
