"""torchvision's ResNet-50 as seed 001 cuts it: six ordered blocks (stem, layer1-4, pool + fc), torchvision's weights.

The blocks are torchvision's own modules, grouped: `stem` is conv1, bn1, relu, maxpool; `head` is avgpool,
a flatten (inline in torchvision's forward) and fc. Seed 001's model parallel cut puts stem, layer1 and layer2
on the first device and layer3, layer4 and the head on the second: SEED_CUT blocks per stage.
"""

from collections import OrderedDict

from torch import nn

SEED_CUT = (3, 3)


def resnet50_blocks(num_classes: int) -> nn.Sequential:
    """torchvision's resnet50 with num_classes outputs (its own initialisation), as six ordered blocks."""
    from torchvision.models import resnet50  # on use: its import costs 1.2 s (torch._dynamo)

    net = resnet50(weights=None, num_classes=num_classes)
    return nn.Sequential(
        OrderedDict(
            [
                ("stem", nn.Sequential(net.conv1, net.bn1, net.relu, net.maxpool)),
                ("layer1", net.layer1),
                ("layer2", net.layer2),
                ("layer3", net.layer3),
                ("layer4", net.layer4),
                ("head", nn.Sequential(net.avgpool, nn.Flatten(1), net.fc)),
            ]
        )
    )
