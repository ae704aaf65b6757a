"""What the zoo's exporters share (examples/aoti_zoo_gpt.py, examples/aoti_zoo_resnet.py): the tensors `tvie train
--save-parameters` wrote, and a model exported with a dynamic batch and compiled into an AOTInductor package whose
metadata tvie reads (the parameters, and the forward FLOPs per sample: torch.utils.flop_counter, 2 per multiply-add)."""
import contextlib

import torch

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def load_tvie_parameters(path):
    """The tensors of `tvie train --save-parameters` (torch::save of a tensor list): the module's parameters in
    order, then its buffers."""
    archive = dict(torch.jit.load(path, map_location="cpu").named_parameters())
    return [archive[str(i)].detach() for i in range(len(archive))]


def compile_package(net, sample, input_name, package, max_batch, flops, onednn_off=False):
    """Exports net(sample) with its batch dynamic in 1 .. max_batch and compiles it into `package`. onednn_off: oneDNN
    and NNPACK off while Inductor compiles, so that a convolutional model's batch range is not narrowed to ATen's
    convolution choice for the sample's batch (examples/aoti_from_python.py says why)."""
    batch = torch.export.Dim("batch", min=1, max=max_batch)
    off = (torch.backends.mkldnn.flags(enabled=False), torch.backends.nnpack.flags(enabled=False)) if onednn_off else ()
    with torch.no_grad(), contextlib.ExitStack() as stack:
        for context in off:
            stack.enter_context(context)
        program = torch.export.export(net, (sample,), dynamic_shapes={input_name: {0: batch}})
        return torch._inductor.aoti_compile_and_package(
            program, package_path=package,
            # Sizes 0 and 1 are exported as >= 2; the kernels hold for a batch of 1 (see aoti_from_python.py).
            inductor_configs={"aot_inductor.check_lowerbound": False, "aot_inductor.metadata": {
                "tvie.forward_flops_per_sample": str(flops),
                "tvie.parameters": str(sum(p.numel() for p in net.parameters()))}})
