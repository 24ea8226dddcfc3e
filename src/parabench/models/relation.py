"""Relation Network (Sung et al., CVPR 2018, "Learning to Compare"), seed 000, as ordered blocks.

Data layout (one EPISODE is the unit on dim 0, so data-parallel and pipeline strategies split episodes):

- input ``x``: float tensor ``(E, N, 3, H, W)`` with ``N = n_way * n_shot + Q``. The first ``n_way * n_shot``
  images are the support set, way-major (support image ``k`` belongs to way ``k // n_shot``); the remaining ``Q``
  images are the queries (usually ``Q = n_way * n_query``; their true ways are the targets, handled outside).
- output: relation scores ``(E, Q, n_way)`` in ``[0, 1]`` (sigmoid); ``score[e, q, w]`` is the relation of query
  ``q`` to way ``w`` of episode ``e``.

Every block takes and returns tensors whose dim 0 is the episode, so the model can be cut between any two blocks
and micro-batched by episodes. Per-image layers are plain torch modules wrapped in :class:`PerImage`.

Two encoders, chosen by :func:`relation_network`:

``conv4``
    The paper's network as in Sung's released code (floodsung/LearningToCompare_FSL, ``miniimagenet/``):
    four conv blocks (84x84 -> 64x19x19), class features summed over the shots, relation module of two conv
    blocks and a 576 -> 8 -> 1 head, Sung's ``weights_init``. One difference: Sung's code builds every
    ``BatchNorm2d`` with ``momentum=1`` (running statistics = the last training batch's); here they keep
    torch's default momentum 0.1. Training mode (batch statistics) is unaffected; only eval-mode statistics differ.

``bottleneck``
    The variant printed in seed 000 (muyuuuu/Algorithm, ``meta-learning/Metric-based/Relation-Netowrk``,
    ``repnet.py`` + ``compare.py``): a ResNet-50-like bottleneck encoder (stem, layer1-3, 1024 channels) and a
    bottleneck relation module (layer4, layer5, average pooling, 256 -> 64 -> 1 head); 11,285,569 parameters,
    as the seed prints. See :func:`relation_network` for the differences from the seed's code.
"""

import math
from typing import Literal

import torch
from torch import Tensor, nn

Encoder = Literal["conv4", "bottleneck"]  # the choices of params.yaml's scales.miniimagenet.<scale>.encoder

SEED_PARAMETER_COUNT = 11_285_569
"""The parameter count seed 000 prints for its model ("共计 11,285,569 个参数")."""


class PerImage(nn.Module):
    """Run a per-image module on ``(E, N, ...)`` by flattening to ``(E*N, ...)`` and unflattening back."""

    def __init__(self, module: nn.Module):
        super().__init__()
        self.module = module

    def forward(self, x: Tensor) -> Tensor:
        episodes, per_episode = x.shape[0], x.shape[1]
        y: Tensor = self.module(x.flatten(0, 1))
        per_image: Tensor = y.unflatten(0, (episodes, per_episode))
        return per_image


class PairWithWays(nn.Module):
    """Turn per-image features into (way feature, query feature) pairs, one per query and way.

    Input ``(E, N, C, H, W)`` with the ``n_way * n_shot`` support features first (way-major), then ``Q`` query
    features. A way's feature is the SUM of its shots' features (as Sung's code: ``torch.sum(sample_features, 1)``).
    Output ``(E, Q * n_way, 2C, H, W)``, query-major (pair ``q * n_way + w`` is query ``q`` with way ``w``),
    channels concatenated in the order ``[way feature, query feature]`` as in Sung's code
    (``torch.cat((sample_features_ext, batch_features_ext), 2)``) and in seed 000's ``compare.py``.
    """

    def __init__(self, n_way: int, n_shot: int):
        super().__init__()
        self.n_way = n_way
        self.n_shot = n_shot

    def forward(self, x: Tensor) -> Tensor:
        episodes, images = x.shape[0], x.shape[1]
        support_size = self.n_way * self.n_shot
        queries = images - support_size
        assert queries >= 1, (
            f"an episode of {images} images has no queries after its {self.n_way}-way "
            f"{self.n_shot}-shot support set of {support_size} images"
        )
        feature_shape = x.shape[2:]
        ways = x[:, :support_size].unflatten(1, (self.n_way, self.n_shot)).sum(dim=2)  # (E, W, C, H, W)
        query = x[:, support_size:]  # (E, Q, C, H, W)
        ways = ways.unsqueeze(1).expand(episodes, queries, self.n_way, *feature_shape)
        query = query.unsqueeze(2).expand(episodes, queries, self.n_way, *feature_shape)
        pairs = torch.cat((ways, query), dim=3)  # (E, Q, W, 2C, H, W)
        return pairs.flatten(1, 2)

    def extra_repr(self) -> str:
        return f"n_way={self.n_way}, n_shot={self.n_shot}, order=[way, query]"


class RelationScores(nn.Module):
    """Reshape per-pair scores ``(E, Q * n_way, 1)`` into ``(E, Q, n_way)``."""

    def __init__(self, n_way: int):
        super().__init__()
        self.n_way = n_way

    def forward(self, x: Tensor) -> Tensor:
        return x.reshape(x.shape[0], -1, self.n_way)

    def extra_repr(self) -> str:
        return f"n_way={self.n_way}"


# --------------------------------------------------------------------------------------------------- conv4


def _conv_block(in_channels: int, out_channels: int, padding: int, pool: bool) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=padding),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(),
    ]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


def sung_weights_init(module: nn.Module) -> None:
    """Sung's ``weights_init``, for ``model.apply``: draws from torch's global RNG only.

    Conv: normal(0, sqrt(2 / n)) with n = k_h * k_w * out_channels, zero bias; BatchNorm: weight 1, bias 0;
    Linear: normal(0, 0.01), bias ones.
    """
    if isinstance(module, nn.Conv2d):
        n = module.kernel_size[0] * module.kernel_size[1] * module.out_channels
        nn.init.normal_(module.weight, 0.0, math.sqrt(2.0 / n))
        if module.bias is not None:
            nn.init.zeros_(module.bias)
    elif isinstance(module, nn.modules.batchnorm._BatchNorm):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)
    elif isinstance(module, nn.Linear):
        nn.init.normal_(module.weight, 0.0, 0.01)
        if module.bias is not None:
            nn.init.ones_(module.bias)


def _conv4(n_way: int, n_shot: int, feature_dim: int = 64, relation_dim: int = 8) -> nn.Sequential:
    f = feature_dim
    model = nn.Sequential(
        # CNNEncoder: 3x84x84 -> 64x41x41 -> 64x19x19 -> 64x19x19 -> 64x19x19
        PerImage(_conv_block(3, f, padding=0, pool=True)),
        PerImage(_conv_block(f, f, padding=0, pool=True)),
        PerImage(_conv_block(f, f, padding=1, pool=False)),
        PerImage(_conv_block(f, f, padding=1, pool=False)),
        PairWithWays(n_way, n_shot),
        # RelationNetwork: 128x19x19 -> 64x8x8 -> 64x3x3
        PerImage(_conv_block(2 * f, f, padding=0, pool=True)),
        PerImage(_conv_block(f, f, padding=0, pool=True)),
        nn.Sequential(
            PerImage(
                nn.Sequential(
                    nn.Flatten(),
                    nn.Linear(f * 3 * 3, relation_dim),
                    nn.ReLU(),
                    nn.Linear(relation_dim, 1),
                    nn.Sigmoid(),
                )
            ),
            RelationScores(n_way),
        ),
    )
    model.apply(sung_weights_init)
    return model


def conv4_parameter_count(feature_dim: int = 64, relation_dim: int = 8, in_channels: int = 3) -> int:
    """The conv4 Relation Network's parameter count, computed from its layer sizes (228,689 for 64 and 8)."""
    f, r = feature_dim, relation_dim

    def conv_bn(c_in: int, c_out: int) -> int:
        return c_in * c_out * 9 + c_out + 2 * c_out  # 3x3 conv weight + bias, BatchNorm weight + bias

    encoder = conv_bn(in_channels, f) + 3 * conv_bn(f, f)
    relation = conv_bn(2 * f, f) + conv_bn(f, f) + (f * 9 * r + r) + (r + 1)
    return encoder + relation


# ---------------------------------------------------------------------------------------------------- seed


def _bottleneck_stage(in_channels: int, planes: int, blocks: int, stride: int) -> nn.Sequential:
    """torchvision/seed ``_make_layer``: a first Bottleneck with a 1x1-conv+BN shortcut when the shape changes."""
    from torchvision.models.resnet import Bottleneck  # on use: its import costs 1.2 s (torch._dynamo)

    out_channels = planes * Bottleneck.expansion
    downsample = None
    if stride != 1 or in_channels != out_channels:
        downsample = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False),
            nn.BatchNorm2d(out_channels),
        )
    units = [Bottleneck(in_channels, planes, stride, downsample)]
    units += [Bottleneck(out_channels, planes) for _ in range(1, blocks)]
    return nn.Sequential(*units)


def _seed_encoder_init(module: nn.Module) -> None:
    """``repnet.py``'s init of its ResNet: conv normal(0, sqrt(2 / n)), n = k_h * k_w * out_channels; BN 1 and 0."""
    if isinstance(module, nn.Conv2d):
        n = module.kernel_size[0] * module.kernel_size[1] * module.out_channels
        nn.init.normal_(module.weight, 0.0, math.sqrt(2.0 / n))
    elif isinstance(module, nn.BatchNorm2d):
        nn.init.ones_(module.weight)
        nn.init.zeros_(module.bias)


def _seed(n_way: int, n_shot: int) -> nn.Sequential:
    encoder = [
        PerImage(
            nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False),
                nn.BatchNorm2d(64),
                # sic: seed 000's repnet.py sets `self.relu = nn.Sigmoid()` where ResNet has a ReLU; kept as is.
                nn.Sigmoid(),
                nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
            )
        ),
        PerImage(_bottleneck_stage(64, 64, 3, stride=1)),  # layer1 -> 256 channels
        PerImage(_bottleneck_stage(256, 128, 4, stride=2)),  # layer2 -> 512 channels
        PerImage(_bottleneck_stage(512, 256, 6, stride=2)),  # layer3 -> 1024 channels
    ]
    # The seed initialises its encoder (repnet) in its constructor, before building layer4/layer5/fc, which
    # keep torch's default initialisation; do the same, in the same order, from torch's global RNG.
    for block in encoder:
        block.apply(_seed_encoder_init)
    relation = [
        PairWithWays(n_way, n_shot),  # -> 2048 channels
        PerImage(_bottleneck_stage(2048, 128, 4, stride=2)),  # layer4 -> 512 channels
        PerImage(_bottleneck_stage(512, 64, 3, stride=2)),  # layer5 -> 256 channels
        nn.Sequential(
            PerImage(
                nn.Sequential(
                    nn.AdaptiveAvgPool2d(1),  # the seed: F.avg_pool2d(x, 3) on its 4x4 map (224x224 inputs)
                    nn.Flatten(),
                    nn.Linear(256, 64),
                    nn.BatchNorm1d(64),
                    nn.ReLU(),
                    nn.Linear(64, 1),
                    nn.Sigmoid(),
                )
            ),
            RelationScores(n_way),
        ),
    ]
    return nn.Sequential(*encoder, *relation)


# --------------------------------------------------------------------------------------------------- build


def relation_network(n_way: int, n_shot: int, encoder: Encoder, width: int = 64) -> nn.Sequential:
    """Build a Relation Network for ``n_way``-way ``n_shot``-shot episodes as an ``nn.Sequential`` of blocks.

    ``width`` is conv4's channel count (64 in the paper); the bottleneck encoder's layers are fixed at 64. The arguments
    are params.yaml's, which its schema has checked (``MiniImagenetSettings``: ``n_way`` >= 2, ``n_shot`` >= 1, the
    encoder's name, width 64 for ``bottleneck``).

    The number of queries is not fixed: it is whatever follows the support set in dim 1 of the input.
    Initialisation draws from torch's global RNG only (the engine seeds it before building).

    ``encoder="conv4"`` (Sung's miniImageNet network, 228,689 parameters), 8 blocks; shapes for one
    84x84 episode of ``N`` images, ``Q`` queries, ``W = n_way``:

    - 0, 1: PerImage(Conv3x3 pad 0 + BN + ReLU + MaxPool2)        -> (E, N, 64, 41, 41), (E, N, 64, 19, 19)
    - 2, 3: PerImage(Conv3x3 pad 1 + BN + ReLU)                   -> (E, N, 64, 19, 19)
    - 4: PairWithWays (sum the shots, pair [way, query])          -> (E, Q*W, 128, 19, 19)
    - 5, 6: PerImage(Conv3x3 pad 0 + BN + ReLU + MaxPool2)        -> (E, Q*W, 64, 8, 8), (E, Q*W, 64, 3, 3)
    - 7: head: Flatten, Linear(576, 8), ReLU, Linear(8, 1), Sigmoid -> (E, Q, W)

    ``encoder="bottleneck"`` (seed 000's bottleneck network, 11,285,569 parameters, as the seed prints), 8 blocks:
    stem (Conv7x7/2 + BN + Sigmoid + MaxPool3/2), layer1 (3 Bottlenecks, 256 ch), layer2 (4, 512 ch, /2),
    layer3 (6, 1024 ch, /2), PairWithWays (2048 ch), layer4 (4 Bottlenecks, planes 128 -> 512 ch, /2),
    layer5 (3, planes 64 -> 256 ch, /2), head (average pool, Linear(256, 64), BatchNorm1d, ReLU, Linear(64, 1),
    Sigmoid). Differences from the seed's code (``compare.py``):

    - Pooling: the seed runs on 224x224 inputs and pools layer5's 4x4 map with ``F.avg_pool2d(x, 3)`` (which,
      with stride 3 and no padding, averages the top-left 3x3 window only); here ``nn.AdaptiveAvgPool2d(1)``
      averages the whole map so that any input size works (84x84: layer5's map is 2x2). Pooling has no
      parameters, so the count is the seed's.
    - Pairing: the seed pairs every support IMAGE with every query, trains each pair towards "same class" and,
      at test time, sums a way's scores over its shots. Here, as in the paper and conv4, a way's feature is the
      sum of its shots' features and each query is paired with each WAY: identical for 1-shot, different for
      k-shot with k > 1.
    - Initialisation: as the seed's, conv normal(0, sqrt(2/n)) and BN 1/0 in the encoder (stem, layer1-3) and
      torch's defaults in layer4, layer5 and the head; the seed also draws a dummy ``torch.rand(2, 3, 224, 224)``
      between the two, which is not reproduced (the weights' distribution is the same, not the exact draws).
    """
    if encoder == "conv4":
        return _conv4(n_way, n_shot, feature_dim=width)
    assert encoder == "bottleneck" and width == 64, f"checked by the settings: encoder {encoder!r}, width {width}"
    return _seed(n_way, n_shot)


def parameter_count(model: nn.Module) -> int:
    """The number of parameters (elements) of a model."""
    return sum(p.numel() for p in model.parameters())
