"""torchvision's ResNet-18 as ordered blocks under torchvision's own names, with a new Xavier-initialised head.

The blocks are torchvision's modules themselves (conv1, bn1, relu, maxpool, layer1-4, avgpool, fc, plus a
flatten that torchvision's forward does inline), so the model's state dict keys are torchvision's: ImageNet
weights load into it unchanged, and model_parallel and pipeline can cut it between blocks. The stem's ReLU is
not in place (torchvision's is): a pipeline stage that begins with it receives its input as a leaf tensor.
"""

from collections import OrderedDict

from torch import nn

HEAD = "fc"


def resnet18_blocks(num_classes: int) -> nn.Sequential:
    """torchvision's resnet18 with `fc` replaced by a Linear to num_classes, Xavier-uniform initialised."""
    from torchvision.models import resnet18  # on use: its import costs 1.2 s (torch._dynamo)

    net = resnet18(weights=None)
    head = nn.Linear(net.fc.in_features, num_classes)
    nn.init.xavier_uniform_(head.weight)
    return nn.Sequential(
        OrderedDict(
            [
                ("conv1", net.conv1),
                ("bn1", net.bn1),
                ("relu", nn.ReLU()),
                ("maxpool", net.maxpool),
                ("layer1", net.layer1),
                ("layer2", net.layer2),
                ("layer3", net.layer3),
                ("layer4", net.layer4),
                ("avgpool", net.avgpool),
                ("flatten", nn.Flatten(1)),
                (HEAD, head),
            ]
        )
    )
