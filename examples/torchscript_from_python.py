"""Saves a model from Python as TorchScript for examples/torchscript_from_python.cpp.

    python3 examples/torchscript_from_python.py /tmp/model.pt    # needs torch (the project's venv has it)
    build/bin/torchscript_from_python /tmp/model.pt

A small convolutional classifier: images [B, 3, 32, 32] -> logits [B, 10]."""
import sys

import torch


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),                                    # [B, 32, 16, 16]
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.BatchNorm2d(64), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1))                            # [B, 64, 1, 1]
        self.head = torch.nn.Linear(64, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


if __name__ == "__main__":
    torch.manual_seed(0)
    path = sys.argv[1] if len(sys.argv) > 1 else "model.pt"
    torch.jit.save(torch.jit.script(Net()), path)
    print(f"saved {path}")
