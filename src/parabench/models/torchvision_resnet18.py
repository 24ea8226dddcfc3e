"""torchvision's ResNet-18 as ordered blocks under torchvision's own names, with a new Xavier-initialised head.

The blocks are torchvision's own modules (its stem, BasicBlock, pooling; a flatten that torchvision's forward does
inline) under its names (conv1, bn1, relu, maxpool, layer1-4, avgpool, fc), initialised as torchvision does, so at
width 64 the state dict is torchvision's resnet18's: ImageNet weights load into it unchanged, and model_parallel and
pipeline can cut it between blocks. `width` scales every stage's channels (64, 128, 256, 512 at width 64). The
stem's ReLU is not in place (torchvision's is): a pipeline stage that begins with it receives its input as a leaf.
"""

from collections import OrderedDict

from torch import nn

HEAD = "fc"
TORCHVISION_WIDTH = 64  # the width of torchvision's resnet18, the one its ImageNet weights fit


def _layer(in_channels: int, channels: int, stride: int) -> nn.Sequential:
    """Two of torchvision's BasicBlocks, the first with its 1x1 projection shortcut where the shape changes."""
    from torchvision.models.resnet import BasicBlock, conv1x1  # on use: torchvision's import costs 1.2 s

    shortcut = None
    if stride != 1 or in_channels != channels:
        shortcut = nn.Sequential(conv1x1(in_channels, channels, stride), nn.BatchNorm2d(channels))
    return nn.Sequential(BasicBlock(in_channels, channels, stride, shortcut), BasicBlock(channels, channels))


def resnet18_blocks(num_classes: int, width: int = TORCHVISION_WIDTH) -> nn.Sequential:
    """torchvision's resnet18 at `width` with `fc` a Linear to num_classes, Xavier-uniform initialised."""
    w = width
    head = nn.Linear(8 * w, num_classes)
    model = nn.Sequential(
        OrderedDict(
            [
                ("conv1", nn.Conv2d(3, w, kernel_size=7, stride=2, padding=3, bias=False)),
                ("bn1", nn.BatchNorm2d(w)),
                ("relu", nn.ReLU()),
                ("maxpool", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
                ("layer1", _layer(w, w, stride=1)),
                ("layer2", _layer(w, 2 * w, stride=2)),
                ("layer3", _layer(2 * w, 4 * w, stride=2)),
                ("layer4", _layer(4 * w, 8 * w, stride=2)),
                ("avgpool", nn.AdaptiveAvgPool2d((1, 1))),
                ("flatten", nn.Flatten(1)),
                (HEAD, head),
            ]
        )
    )
    for module in model.modules():  # torchvision's ResNet initialisation
        if isinstance(module, nn.Conv2d):
            nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
        elif isinstance(module, nn.BatchNorm2d):
            nn.init.constant_(module.weight, 1)
            nn.init.constant_(module.bias, 0)
    nn.init.xavier_uniform_(head.weight)
    return model
