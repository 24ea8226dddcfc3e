"""`resnet50`: seed 001's timing of torchvision's ResNet-50 on random images, whole, cut in two, and pipelined.

Batches of random 3 x image_size x image_size images with random classes among num_classes, MSE against
one-hot targets, SGD; a run (an epoch) is num_batches batches, and the seed's `repeats` are epochs. There is no
dataset and no accuracy: the data only makes the model work, so the metrics are times, rates and memory. With
params.yaml `inputs.resnet50` naming a prepared dataset, the images are that dataset's real pixels instead.
"""

from pathlib import Path
from typing import Annotated, Any, Literal

import torch
from pydantic import Field
from torch import nn

from parabench.models.torchvision_resnet50 import SEED_CUT, resnet50_blocks
from parabench.workloads.contract import Question, TrainSettings, Workload
from parabench.workloads.random_images import random_images
from parabench.workloads.real_pixels import real_pixel_images
from parabench.workloads.timing_images import NOT_APPLICABLE, TimingImages


class Resnet50Settings(TrainSettings):
    """The random images' size, the number of classes and how many batches make one timed run."""

    scaling: Literal["strong"]  # seed 001's batch is the whole step's, on any number of devices
    image_size: Annotated[int, Field(ge=48)]  # at 48 the last stage still sees 2 x 2: BatchNorm trains on 1 image
    num_classes: Annotated[int, Field(ge=2)]
    num_batches: Annotated[int, Field(ge=1)]  # batches per run (epoch); seed 001: 3


class Resnet50(Workload[Resnet50Settings]):
    """Seed 001's experiment: how long ResNet-50 takes to train on one device, cut over two, and pipelined."""

    name = "resnet50"
    question = Question(
        "001",
        "ResNet-50 cut across devices: model parallelism and pipelining",
        "What does model parallelism cost, what does pipelining win back, and which split size is best?",
        compared=(("model_parallel", "single"),),
    )
    dataset = None
    generator_file = "src/parabench/workloads/random_images.py"
    settings_model = Resnet50Settings
    primary_metric = None

    def build_model(self, settings: Resnet50Settings) -> nn.Sequential:
        return resnet50_blocks(settings.num_classes)

    def unit_shape(self, settings: Resnet50Settings) -> tuple[int, ...]:
        return (3, settings.image_size, settings.image_size)

    def documented_cut(self, settings: Resnet50Settings) -> tuple[int, ...]:
        return SEED_CUT

    def choices_beside_metrics(self, settings: Resnet50Settings) -> dict[str, str]:
        return {"accuracy": NOT_APPLICABLE}

    def optimizer(self, groups: list[dict[str, Any]], settings: Resnet50Settings) -> torch.optim.Optimizer:
        return torch.optim.SGD(groups)

    def open(self, prepared: Path | None, settings: Resnet50Settings) -> TimingImages:
        units = settings.num_batches * settings.batch_size
        if prepared is None:
            return random_images(units, self.unit_shape(settings), settings.num_classes, settings.seed)
        return real_pixel_images(prepared, units, settings.image_size, settings.num_classes, settings.seed)
