"""`hotdog`: fine-tune torchvision's ResNet-18 on d2l's hotdog images, with a 10x head learning rate (seed 002).

Images are prepared once as uint8 256x256 arrays; training views are seeded RandomResizedCrop + flip on the
training device, test views a centred crop (transforms.v2). `pretrained` chooses the starting weights:
torchvision's ImageNet file, none (random), or a local state dict; `freeze_backbone` trains the head alone.
`optimizer` is the seed's SGD, or AdamW, which learns much faster from random weights on a few photos.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import torch
from pydantic import Field, field_validator, model_validator
from torch import Tensor, nn

from parabench.batch import Batch
from parabench.data.hotdog import HOTDOG
from parabench.models.torchvision_resnet18 import HEAD, TORCHVISION_WIDTH, resnet18_blocks
from parabench.workloads.classification import LabelledImages
from parabench.workloads.contract import ParamGroup, Question, TrainSettings, Workload
from parabench.workloads.image_views import eval_views, train_views
from parabench.workloads.pretrained import (
    IMAGENET_CHOICE,
    NO_WEIGHTS,
    fetch_imagenet_weights,
    load_backbone,
    read_state_dict,
)


class HotdogSettings(TrainSettings):
    """Starting weights, what trains, the head's learning-rate multiple, SGD's terms and the crop size."""

    pretrained: str  # imagenet | none | a path to a .pth state dict of torchvision's resnet18
    freeze_backbone: bool  # train the head alone: the other parameters get no gradient and no optimiser slot
    head_lr_mult: Annotated[float, Field(gt=0)]  # the head's lr is this times lr (seed 002: 10)
    optimizer: Literal["sgd", "adamw"]  # seed 002: sgd; adamw learns faster from scratch on a few photos
    momentum: Annotated[float, Field(ge=0, lt=1)]  # SGD's
    weight_decay: Annotated[float, Field(ge=0)]  # SGD's L2 term, or AdamW's decoupled decay
    image_size: Annotated[int, Field(ge=32, le=256)]  # crop size (seed 002: 224); prepared images are 256x256
    crop_scale: Annotated[float, Field(gt=0, le=1)]  # RandomResizedCrop's smallest share (torchvision: 0.08)
    eval_batch_size: Annotated[int, Field(ge=1)]
    width: Annotated[int, Field(ge=4)]  # channels of the ResNet's first stage (torchvision's, and its weights': 64)

    @model_validator(mode="after")
    def _weights_fit_the_width(self) -> "HotdogSettings":
        if self.pretrained != NO_WEIGHTS and self.width != TORCHVISION_WIDTH:
            raise ValueError(
                f"width: {self.width} does not fit pretrained: '{self.pretrained}' (weights of torchvision's "
                f"resnet18, width {TORCHVISION_WIDTH}): set width: {TORCHVISION_WIDTH} or pretrained: {NO_WEIGHTS}"
            )
        return self

    @model_validator(mode="after")
    def _momentum_is_sgds(self) -> "HotdogSettings":
        if self.optimizer != "sgd" and self.momentum != 0:
            raise ValueError(
                f"momentum: {self.momentum} is SGD's, and optimizer is '{self.optimizer}' (which keeps "
                "its own moving averages): set momentum: 0 or optimizer: sgd"
            )
        return self

    @field_validator("pretrained")
    @classmethod
    def _known_choice_or_file(cls, value: str) -> str:
        if value not in (IMAGENET_CHOICE, NO_WEIGHTS) and not Path(value).is_file():
            raise ValueError(
                f"'{value}' is neither '{IMAGENET_CHOICE}' (torchvision's ImageNet weights), "
                f"'{NO_WEIGHTS}' (random initialisation) nor an existing .pth file"
            )
        return value


@dataclass(frozen=True)
class HotdogData(LabelledImages):
    """Prepared uint8 images (N, 3, 256, 256) and labels for training and testing, the crop size and smallest share."""

    image_size: int
    crop_scale: float
    augments: ClassVar[bool] = True

    def transform(self, batch: Batch) -> Batch:
        if batch.unit_seeds is None:
            raise ValueError("hotdog's training views need a seed per unit (Batch.unit_seeds)")
        return Batch(train_views(batch.inputs, batch.unit_seeds, self.image_size, self.crop_scale), batch.targets)

    def test_inputs(self, images: Tensor) -> Tensor:
        return eval_views(images, self.image_size)


class Hotdog(Workload[HotdogSettings]):
    """Seed 002's experiment: fine-tune an ImageNet ResNet-18 to tell hot dogs from other food."""

    name = "hotdog"
    question = Question(
        "002",
        "d2l's hand-written all-reduce, and fine-tuning ResNet-18 on hotdog",
        "Does gradient averaging written by hand keep up with the library's, and does fine-tuning reach the same "
        "accuracy under every strategy?",
        compared=(("allreduce", "ddp"),),
    )
    dataset = "hotdog"
    settings_model = HotdogSettings
    primary_metric = "test_acc"

    def build_model(self, settings: HotdogSettings) -> nn.Sequential:
        model = resnet18_blocks(num_classes=2, width=settings.width)
        if settings.freeze_backbone:
            for name, parameter in model.named_parameters():
                parameter.requires_grad_(name.startswith(f"{HEAD}."))
        return model

    def unit_shape(self, settings: HotdogSettings) -> tuple[int, ...]:
        return (3, settings.image_size, settings.image_size)

    def choices_beside_metrics(self, settings: HotdogSettings) -> dict[str, str]:
        return {"pretrained": settings.pretrained}

    def prefetch(self, settings: HotdogSettings) -> None:
        if settings.pretrained == IMAGENET_CHOICE:
            fetch_imagenet_weights()

    def initialize(self, model: nn.Module, settings: HotdogSettings) -> None:
        if settings.pretrained == NO_WEIGHTS:
            return
        path = fetch_imagenet_weights() if settings.pretrained == IMAGENET_CHOICE else Path(settings.pretrained)
        load_backbone(model, read_state_dict(path), path)

    def param_groups(
        self, named_parameters: Iterable[tuple[str, nn.Parameter]], settings: HotdogSettings
    ) -> list[ParamGroup]:
        """The backbone at the base lr, the head at head_lr_mult times it; frozen parameters in neither."""
        trained = [(name, parameter) for name, parameter in named_parameters if parameter.requires_grad]
        backbone = [parameter for name, parameter in trained if not name.startswith(f"{HEAD}.")]
        head = [parameter for name, parameter in trained if name.startswith(f"{HEAD}.")]
        groups = [ParamGroup(backbone), ParamGroup(head, lr_scale=settings.head_lr_mult)]
        return [group for group in groups if group.params]

    def optimizer(self, groups: list[dict[str, Any]], settings: HotdogSettings) -> torch.optim.Optimizer:
        if settings.optimizer == "adamw":
            return torch.optim.AdamW(groups, weight_decay=settings.weight_decay, fused=True)
        return torch.optim.SGD(groups, momentum=settings.momentum, weight_decay=settings.weight_decay)

    def open(self, prepared: Path | None, settings: HotdogSettings) -> HotdogData:
        assert prepared is not None
        data = HOTDOG.load_prepared(prepared)
        train, test = data.splits["train"], data.splits["test"]
        return HotdogData(
            torch.from_numpy(train.images),
            torch.from_numpy(train.labels),
            torch.from_numpy(test.images),
            torch.from_numpy(test.labels),
            settings.eval_batch_size,
            HOTDOG.origin_sentence(data.provenance),
            settings.image_size,
            settings.crop_scale,
            provenance_record=data.provenance,
        )
