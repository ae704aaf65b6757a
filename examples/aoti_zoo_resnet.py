"""Compiles the zoo's resnet with tvie's own weights into an AOTInductor package, for `tvie infer`/`compare --aoti`.

    build/bin/tvie train --model resnet --preset tiny --steps 50 --save-parameters /tmp/resnet.pt
    python3 examples/aoti_zoo_resnet.py /tmp/resnet.pt /tmp/resnet.pt2 --image-size 32
    build/bin/tvie compare --model resnet --preset tiny --infer-dtype fp32 --aoti /tmp/resnet.pt2

A Python twin of lib/src/models/model_resnet.cpp (torchvision's ResNet v1.5: the stride on the 3x3 convolution of a
bottleneck, a 1x1 projection where the shape changes), its parameters and BatchNorm statistics taken in order from
the file `tvie train --save-parameters` wrote. The layout follows from their shapes: the stem's width, basic or
bottleneck blocks (the first block's first kernel), the blocks per stage (each stage doubles the planes), the
classes; the image size does not (tiny 32, resnet18 and resnet50 224). The package computes the same logits [B,
classes] as the zoo's eval() forward; its metadata carries the parameters and the forward FLOPs per sample
(torch.utils.flop_counter: the convolutions and the classifier, 2 per multiply-add, as tvie's analytic count).
tests/test_examples.cpp compares the package's logits with tvie's own forward on the same weights."""
import argparse

import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from aoti_export import DTYPES, compile_package, load_tvie_parameters


def conv(cin, cout, k, stride):
    return torch.nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)


class Block(torch.nn.Module):
    """The modules in the order model_resnet.cpp registers them: parameters() and buffers() follow it."""

    def __init__(self, cin, planes, stride, bottleneck):
        super().__init__()
        cout = planes * (4 if bottleneck else 1)
        self.bottleneck = bottleneck
        if bottleneck:
            self.conv1, self.bn1 = conv(cin, planes, 1, 1), torch.nn.BatchNorm2d(planes)
            self.conv2, self.bn2 = conv(planes, planes, 3, stride), torch.nn.BatchNorm2d(planes)
            self.conv3, self.bn3 = conv(planes, cout, 1, 1), torch.nn.BatchNorm2d(cout)
        else:
            self.conv1, self.bn1 = conv(cin, planes, 3, stride), torch.nn.BatchNorm2d(planes)
            self.conv2, self.bn2 = conv(planes, planes, 3, 1), torch.nn.BatchNorm2d(planes)
        self.down = stride != 1 or cin != cout
        if self.down:
            self.downsample_conv, self.downsample_bn = conv(cin, cout, 1, stride), torch.nn.BatchNorm2d(cout)

    def forward(self, x):  # [B, cin, H, W] -> [B, cout, H / stride, W / stride]
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.bottleneck:
            y = self.bn3(self.conv3(F.relu(y)))
        skip = self.downsample_bn(self.downsample_conv(x)) if self.down else x
        return F.relu(y + skip)


class Resnet(torch.nn.Module):
    def __init__(self, in_channels, width, blocks, bottleneck, classes):
        super().__init__()
        self.conv1, self.bn1 = conv(in_channels, width, 7, 2), torch.nn.BatchNorm2d(width)
        layers, channels = [], width
        for stage, count in enumerate(blocks):
            planes = width << stage
            for block in range(count):
                layers.append(Block(channels, planes, 2 if stage > 0 and block == 0 else 1, bottleneck))
                channels = planes * (4 if bottleneck else 1)
        self.blocks = torch.nn.ModuleList(layers)
        self.fc = torch.nn.Linear(channels, classes)

    def forward(self, x):  # [B, 3, H, W] -> logits [B, classes]
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, 2, 1)  # [B, width, H/4, W/4]
        for block in self.blocks:
            x = block(x)
        return self.fc(x.mean((2, 3)))  # global average pool, then the classifier


def layout_of(tensors):
    """(in_channels, width, blocks per stage, bottleneck, classes) from the parameters' shapes."""
    stem = tensors[0]
    width, in_channels = stem.shape[0], stem.shape[1]
    bottleneck = tensors[3].dim() == 4 and tensors[3].shape[-1] == 1  # the first block's first convolution
    per_block = 9 if bottleneck else 6  # convolutions 1 each, BatchNorms 2 each
    i, channels, blocks = 3, width, []
    while i < len(tensors) and tensors[i].dim() == 4:
        planes = tensors[i].shape[0]
        stage = (planes // width).bit_length() - 1
        if planes != width << stage or stage > len(blocks):
            raise SystemExit(f"tensor {i}: {planes} planes after {channels} channels is not the zoo's resnet")
        if stage == len(blocks):
            blocks.append(0)
        stride = 2 if stage > 0 and blocks[stage] == 0 else 1
        cout = planes * (4 if bottleneck else 1)
        i += per_block + (3 if stride != 1 or channels != cout else 0)
        blocks[stage] += 1
        channels = cout
    return in_channels, width, blocks, bottleneck, tensors[i].shape[0]


def twin_of(tensors):
    net = Resnet(*layout_of(tensors))
    targets = list(net.parameters()) + list(net.buffers())
    params = len(list(net.parameters()))
    if len(tensors) not in (params, len(targets)):
        raise SystemExit(f"the twin has {params} parameters and {len(targets) - params} buffers, the file "
                         f"{len(tensors)} tensors")
    with torch.no_grad():
        for p, t in zip(targets, tensors):  # a file of the parameters alone leaves the buffers fresh
            if p.shape != t.shape:
                raise SystemExit(f"shape {tuple(t.shape)} where the twin has {tuple(p.shape)}")
            p.copy_(t)
    return net


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parameters", help="the file `tvie train --model resnet --save-parameters` wrote")
    parser.add_argument("package", help="the .pt2 file to write")
    parser.add_argument("--image-size", type=int, required=True, help="H = W (tiny 32, resnet18 and resnet50 224)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: the device the package is compiled for")
    parser.add_argument("--dtype", default="fp32", choices=sorted(DTYPES), help="the weights' and inputs' dtype")
    parser.add_argument("--max-batch", type=int, default=4096, help="the largest batch the package accepts")
    args = parser.parse_args()
    dtype = DTYPES[args.dtype]
    net = twin_of(load_tvie_parameters(args.parameters)).eval().to(device=args.device, dtype=dtype)
    in_channels = net.conv1.weight.shape[1]
    sample = torch.randn(2, in_channels, args.image_size, args.image_size, device=args.device, dtype=dtype)
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        net(sample[:1])
    flops = counter.get_total_flops()
    path = compile_package(net, sample, "x", args.package, args.max_batch, flops, onednn_off=True)
    params = sum(p.numel() for p in net.parameters())
    print(f"saved {path}: {len(net.blocks)} blocks, width {net.conv1.weight.shape[0]}, {net.fc.out_features} "
          f"classes, {args.image_size}x{args.image_size} images, {params:,} parameters, "
          f"{flops / 1e6:.1f} MFLOP per sample")


if __name__ == "__main__":
    main()
