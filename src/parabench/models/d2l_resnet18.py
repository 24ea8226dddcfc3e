"""d2l's ResNet-18 variant for small images (3x3 stride-1 stem, no max-pool), as ordered blocks."""

from torch import Tensor, nn
from torch.nn import functional as F


class Residual(nn.Module):
    """d2l's basic residual unit: two 3x3 convolutions with batch norm and an optional 1x1 shortcut."""

    def __init__(self, in_channels: int, out_channels: int, use_1x1conv: bool = False, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, stride=stride)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, padding=1)
        self.conv3 = nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride) if use_1x1conv else None
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.bn2 = nn.BatchNorm2d(out_channels)

    def forward(self, x: Tensor) -> Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if self.conv3 is not None:
            x = self.conv3(x)
        return F.relu(y + x)


def _resnet_stage(in_channels: int, out_channels: int, num_residuals: int, first_stage: bool) -> nn.Sequential:
    units = [
        Residual(in_channels, out_channels, use_1x1conv=True, stride=2)
        if i == 0 and not first_stage
        else Residual(out_channels, out_channels)
        for i in range(num_residuals)
    ]
    return nn.Sequential(*units)


def d2l_resnet18(num_classes: int, in_channels: int = 1, width: int = 64) -> nn.Sequential:
    """Build seeds 002/003's ResNet-18; `width` is the stem's channel count (64 in the seeds)."""
    w = width
    return nn.Sequential(
        nn.Sequential(nn.Conv2d(in_channels, w, kernel_size=3, stride=1, padding=1), nn.BatchNorm2d(w), nn.ReLU()),
        _resnet_stage(w, w, 2, first_stage=True),
        _resnet_stage(w, 2 * w, 2, first_stage=False),
        _resnet_stage(2 * w, 4 * w, 2, first_stage=False),
        _resnet_stage(4 * w, 8 * w, 2, first_stage=False),
        nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(8 * w, num_classes)),
    )
