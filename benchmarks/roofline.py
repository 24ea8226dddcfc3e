"""A published pipeline's stage costs from its balance: each layer's time on a roofline of the device's datasheet.

    python benchmarks/roofline.py --balance 26 22 33 44 44 66 66 69 [--peak-tflops 11.76] [--bandwidth-gbs 346]

torchgpipe cuts ResNet-101 as its own nn.Sequential of 370 layers (its benchmarks/models/resnet: the stem's conv1,
bn1, relu and maxpool; each bottleneck as identity, conv1, bn1, relu, conv2, bn2, relu, conv3, bn3, residual (with
the downsample), relu; avgpool, flatten and fc), and publishes a balance: how many of those layers each GPU holds.
Its benchmarks chose the balance per GPU count by profiling (balanced in time, within memory), so equal layer
counts are not equal costs. This costs each layer of torchvision's ResNet-101, in that order, on the roofline of
the device the table was measured on: a layer takes the longer of its FLOPs at the device's peak and its bytes at
its memory bandwidth (one sample's input and output activations in fp32; the weights, read once per micro-batch,
are left out), forward and backward alike. A stage's cost is the sum of its layers'. Nothing is fitted to a
published speed: the inputs are the model, the published balance and the datasheet (the defaults: Tesla P40's
11.76 TFLOP/s fp32 and 346 GB/s, NVIDIA's specifications).
"""

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate

import torch
import torchvision
from torch import Tensor, nn
from torch.utils.flop_counter import FlopCounterMode

IMAGE_SHAPE = (3, 224, 224)
FP32_BYTES = 4
P40_PEAK_FLOPS, P40_BANDWIDTH = 11.76e12, 346e9


@dataclass(frozen=True)
class Layer:
    """One layer of the cut model: its FLOPs and the activation elements it reads and writes, for one sample."""

    flops: float
    elements_in: int
    elements_out: int

    def seconds(self, peak_flops: float, bandwidth: float) -> float:
        """The roofline: compute-bound or memory-bound, whichever takes longer."""
        return max(self.flops / peak_flops, FP32_BYTES * (self.elements_in + self.elements_out) / bandwidth)


def counted(module: nn.Module, tensor: Tensor) -> tuple[Layer, Tensor]:
    """Run one layer and count its FLOPs and activations."""
    with FlopCounterMode(display=False) as counter:
        output = module(tensor)
    return Layer(float(counter.get_total_flops()), tensor.numel(), output.numel()), output


def counted_in_turn(modules: Sequence[nn.Module], tensor: Tensor) -> tuple[list[Layer], Tensor]:
    """Run `modules` one after another, each counted as a layer."""
    layers = []
    for module in modules:
        layer, tensor = counted(module, tensor)
        layers.append(layer)
    return layers, tensor


def bottleneck_layers(block: torchvision.models.resnet.Bottleneck, tensor: Tensor) -> tuple[list[Layer], Tensor]:
    """A bottleneck as torchgpipe's 11 layers: identity (it stashes a reference to its input for the residual: no
    FLOPs, no bytes moved), the three convolutions with their norms and ReLUs, the residual (with the downsample, if
    any) and the last ReLU."""
    block_input = tensor
    convolutions, tensor = counted_in_turn(
        (block.conv1, block.bn1, block.relu, block.conv2, block.bn2, block.relu, block.conv3, block.bn3), tensor
    )
    layers = [Layer(0.0, 0, 0), *convolutions]
    downsample_flops, identity = 0.0, block_input
    if block.downsample is not None:
        downsample, identity = counted(block.downsample, block_input)
        downsample_flops = downsample.flops
    residual = tensor + identity
    layers.append(Layer(downsample_flops, tensor.numel() + block_input.numel(), residual.numel()))
    layer, tensor = counted(nn.ReLU(), residual)
    return [*layers, layer], tensor


@cache
def torchgpipe_resnet101_layers() -> tuple[Layer, ...]:
    """torchvision's ResNet-101, one sample, in torchgpipe's 370 layers (module docstring)."""
    model = torchvision.models.resnet101().eval()
    tensor = torch.zeros(1, *IMAGE_SHAPE)
    with torch.no_grad():
        layers, tensor = counted_in_turn((model.conv1, model.bn1, model.relu, model.maxpool), tensor)
        for stage in (model.layer1, model.layer2, model.layer3, model.layer4):
            for block in stage:
                block_layers, tensor = bottleneck_layers(block, tensor)
                layers.extend(block_layers)
        head, _ = counted_in_turn((model.avgpool, nn.Flatten(), model.fc), tensor)
    return (*layers, *head)


def stage_costs(layers: Sequence[Layer], balance: Sequence[int], peak_flops: float, bandwidth: float) -> list[float]:
    """Each stage's seconds for one sample: the sum over the layers `balance` gives it, in order."""
    if sum(balance) != len(layers) or min(balance) < 1:
        raise ValueError(
            f"balance {list(balance)} must give each stage at least one layer and all {len(layers)} layers in all "
            f"(it gives {sum(balance)})"
        )
    seconds = [layer.seconds(peak_flops, bandwidth) for layer in layers]
    ends = list(accumulate(balance))
    return [sum(seconds[start:end]) for start, end in zip([0, *ends[:-1]], ends, strict=True)]


def main() -> None:
    """Print each stage's share of the step for the balance given."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--balance", type=int, nargs="+", required=True)
    parser.add_argument("--peak-tflops", type=float, default=P40_PEAK_FLOPS / 1e12)
    parser.add_argument("--bandwidth-gbs", type=float, default=P40_BANDWIDTH / 1e9)
    args = parser.parse_args()
    try:
        costs = stage_costs(
            torchgpipe_resnet101_layers(), args.balance, args.peak_tflops * 1e12, args.bandwidth_gbs * 1e9
        )
    except ValueError as error:
        parser.error(f"--balance: {error}")
    print(" ".join(f"{cost / sum(costs):.3f}" for cost in costs))


if __name__ == "__main__":
    main()
