"""`miniimagenet`: few-shot learning with a Relation Network, Adam and MSE on relation scores (seed 000).

The unit is an EPISODE: n_way classes, n_shot support and n_query query images each. A step trains on
`batch_size` episodes (strong scaling: shared among data-parallel replicas, each taking whole episodes; weak:
that many per replica, the learning rate times the replicas). Episode i of epoch e is a pure function of
(seed, e, i), so replicas draw their own episodes from the indices the engine deals them.
"""

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import torch
from pydantic import Field, model_validator
from torch import Tensor, nn
from tqdm import tqdm

from parabench.batch import Batch
from parabench.data.episodes import EpisodeSampler, EpisodeShape
from parabench.data.miniimagenet import MINIIMAGENET
from parabench.data.prepared import SplitArrays
from parabench.data.provenance import Provenance
from parabench.errors import DataError
from parabench.models.relation import Encoder, relation_network
from parabench.workloads.contract import Question, TrainSettings, Workload, WorkloadData
from parabench.workloads.episodic import episode_accuracies, relation_loss
from parabench.workloads.image_views import IMAGENET_MEAN, IMAGENET_STD

EVAL_STREAMS = {"val": 2**31, "test": 2**31 + 1}  # fixed episode streams, apart from the epochs' 0, 1, 2, ...


class MiniImagenetSettings(TrainSettings):
    """Episodes, the encoder, evaluation episodes and the learning-rate schedule, at one scale."""

    encoder: Encoder
    width: Annotated[int, Field(ge=1)]  # conv4's channels (64 in the paper); the bottleneck encoder needs 64
    n_way: Annotated[int, Field(ge=2)]
    n_shot: Annotated[int, Field(ge=1)]
    n_query: Annotated[int, Field(ge=1)]  # query images per way in training episodes
    eval_n_query: Annotated[int, Field(ge=1)]  # ... in validation and test episodes
    episodes_per_epoch: Annotated[int, Field(ge=1)]
    val_episodes: Annotated[int, Field(ge=1)]  # scored after every epoch
    test_episodes: Annotated[int, Field(ge=1)]  # scored by the evaluate stage (600 in the paper)
    eval_batch_size: Annotated[int, Field(ge=1)]  # episodes per evaluation forward
    lr_step_size: Annotated[int, Field(ge=1)] | None  # StepLR every so many optimiser steps; None: constant
    lr_gamma: Annotated[float, Field(gt=0, le=1)]

    @model_validator(mode="after")
    def _one_schedule(self) -> "MiniImagenetSettings":
        if self.lr_step_size is not None and self.lr_schedule != "constant":
            raise ValueError(
                f"lr_step_size: {self.lr_step_size} (StepLR) and lr_schedule: '{self.lr_schedule}' are "
                "two schedules; set lr_step_size: null or lr_schedule: constant"
            )
        return self

    @model_validator(mode="after")
    def _bottleneck_encoder_is_fixed(self) -> "MiniImagenetSettings":
        if self.encoder == "bottleneck" and self.width != 64:
            raise ValueError(
                f"encoder 'bottleneck' has fixed layers (11,285,569 parameters): set width to 64, not {self.width}"
            )
        return self


def to_inputs(images: Tensor) -> Tensor:
    """uint8 episode images (..., 3, H, W) to floats normalised with ImageNet's mean and deviation."""
    mean = torch.tensor(IMAGENET_MEAN, device=images.device).view(3, 1, 1)
    std = torch.tensor(IMAGENET_STD, device=images.device).view(3, 1, 1)
    return (images.float().div_(255.0) - mean) / std


def sampler(split: SplitArrays, shape: EpisodeShape, seed: int, name: str) -> EpisodeSampler:
    """The split's episode sampler; a class too small for an episode is a DataError naming the fix."""
    try:
        return EpisodeSampler(split.labels, shape, seed)
    except ValueError as problem:
        raise DataError(
            f"miniImageNet's {name} split cannot make {shape.n_way}-way {shape.n_shot}-shot episodes with "
            f"{shape.n_query} queries per way: {problem}. Lower n_shot or n_query (params.yaml scales.miniimagenet) "
            "or use a larger data set."
        ) from None


@dataclass(frozen=True)
class MiniImagenetData(WorkloadData):
    """The prepared splits and their episode samplers; evaluation on fixed, seeded episode streams."""

    unit = "episode"
    epoch_split = "val"

    splits: dict[str, SplitArrays]
    samplers: dict[str, EpisodeSampler]
    settings: MiniImagenetSettings
    origin: str
    provenance_record: Provenance | None = field(default=None, kw_only=True)

    @property
    def train_units(self) -> int:
        return self.settings.episodes_per_epoch

    def episodes(self, split: str, stream: int, indices: Tensor | list[int]) -> Batch:
        """Episodes of a split as a batch: images (E, N, 3, 84, 84) uint8 and query targets (E, Q)."""
        images, targets = self.samplers[split].episodes(stream, indices)
        return Batch(torch.from_numpy(self.splits[split].images)[images], targets)

    def train_batch(self, epoch: int, indices: Tensor) -> Batch:
        return self.episodes("train", epoch, indices)

    def transform(self, batch: Batch) -> Batch:
        return Batch(to_inputs(batch.inputs), batch.targets)

    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        return relation_loss(outputs, targets)

    def tally(self, outputs: Tensor, targets: Tensor) -> dict[str, Tensor]:
        return {"acc": episode_accuracies(outputs, targets).sum()}

    @torch.no_grad()
    def item_scores(self, model: nn.Module, split: str, device: torch.device) -> Tensor:
        """Query accuracy of each of the split's fixed episodes, in evaluation mode."""
        if split not in EVAL_STREAMS:
            raise ValueError(f"miniimagenet scores the val and test splits, not {split!r}")
        count = self.settings.val_episodes if split == "val" else self.settings.test_episodes
        was_training = model.training
        model.eval()
        accuracies = []
        step = self.settings.eval_batch_size
        for start in tqdm(range(0, count, step), desc=f"{split} episodes", unit="batch", leave=False, disable=None):
            batch = self.episodes(split, EVAL_STREAMS[split], list(range(start, min(count, start + step))))
            scores = model(to_inputs(batch.inputs.to(device, non_blocking=True)))
            accuracies.append(episode_accuracies(scores, batch.targets.to(scores.device)).cpu())
        model.train(was_training)
        return torch.cat(accuracies)


class MiniImagenet(Workload[MiniImagenetSettings]):
    """Seed 000's experiment: a Relation Network learns to compare on miniImageNet episodes."""

    name = "miniimagenet"
    question = Question(
        "000",
        "A Relation Network on miniImageNet: DataParallel against DistributedDataParallel",
        "Is DistributedDataParallel faster than DataParallel for a few-shot Relation Network, and does either "
        "change what the model learns?",
        compared=(("ddp", "dp"),),
    )
    dataset = "miniimagenet"
    settings_model = MiniImagenetSettings
    primary_metric = "test_acc"

    def build_model(self, settings: MiniImagenetSettings) -> nn.Sequential:
        return relation_network(settings.n_way, settings.n_shot, settings.encoder, settings.width)

    def unit_shape(self, settings: MiniImagenetSettings) -> tuple[int, ...]:
        return (settings.n_way * (settings.n_shot + settings.n_query), *MINIIMAGENET.image_shape)

    def optimizer(self, groups: list[dict[str, Any]], settings: MiniImagenetSettings) -> torch.optim.Optimizer:
        return torch.optim.Adam(groups, fused=True)

    def lr_schedule(
        self, optimizer: torch.optim.Optimizer, settings: MiniImagenetSettings, steps_per_epoch: int
    ) -> torch.optim.lr_scheduler.LRScheduler | None:
        if settings.lr_step_size is None:
            return super().lr_schedule(optimizer, settings, steps_per_epoch)
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=settings.lr_step_size, gamma=settings.lr_gamma)

    def open(self, prepared: Path | None, settings: MiniImagenetSettings) -> MiniImagenetData:
        assert prepared is not None
        data = MINIIMAGENET.load_prepared(prepared)
        train_shape = EpisodeShape(settings.n_way, settings.n_shot, settings.n_query)
        eval_shape = EpisodeShape(settings.n_way, settings.n_shot, settings.eval_n_query)
        samplers = {
            split: sampler(data.splits[split], train_shape if split == "train" else eval_shape, settings.seed, split)
            for split in MINIIMAGENET.splits
        }
        return MiniImagenetData(
            data.splits,
            samplers,
            settings,
            MINIIMAGENET.origin_sentence(data.provenance),
            provenance_record=data.provenance,
        )
