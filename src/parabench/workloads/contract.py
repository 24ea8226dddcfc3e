"""The workload contract: everything the engine, strategies and report may know of a workload, and nothing more.

A workload builds a plain model as ordered blocks, chooses its optimiser and parameter groups, and opens its
data. The opened data gives the engine batches of units (samples, or whole episodes) by index, and says how
to score outputs: a loss, per-unit tallies summed over a pass, and an evaluation. The engine deals unit
indices out to replicas itself, so every workload is split among data-parallel replicas by the same code.
"""

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Generic, Literal, TypeVar

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn

from parabench.batch import Batch
from parabench.data.provenance import Provenance
from parabench.stats import mean_and_interval

# params.yaml's workload names: the registry's keys in its order (workloads/__init__.py; tests/test_config.py)
WorkloadName = Literal["fashion_mnist", "miniimagenet", "hotdog", "resnet50"]
Scaling = Literal["weak", "strong"]  # weak: the batch is per replica, the global batch grows; strong: it is shared


class TrainSettings(BaseModel):
    """Hyper-parameters every workload has, at one scale; a workload adds its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    epochs: Annotated[int, Field(ge=1)]
    batch_size: Annotated[int, Field(ge=1)]
    lr: Annotated[float, Field(gt=0)]
    scaling: Scaling
    warmup_steps: Annotated[int, Field(ge=0)]
    seed: Annotated[int, Field(ge=0, lt=2**32)]  # one 32-bit word of every SeedSequence a run draws from
    lr_schedule: Literal["constant", "cosine"] = "constant"  # cosine: linear warm-up, then down to 0 at the last step
    lr_warmup_epochs: Annotated[float, Field(ge=0)] = 0.0  # cosine's linear warm-up from 0, in epochs


def cosine_with_warmup(warmup_steps: int, total_steps: int) -> Callable[[int], float]:
    """The learning rate's factor after `step` optimiser steps: up in a straight line over the warm-up, then half a
    cosine down to 0 at the last step."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return factor


SettingsT = TypeVar("SettingsT", bound=TrainSettings)


@dataclass(frozen=True)
class ParamGroup:
    """Parameters that share a learning rate: `lr_scale` times the run's learning rate."""

    params: list[nn.Parameter]
    lr_scale: float = 1.0


class WorkloadData(ABC):
    """One opened dataset: training units by index, the loss, per-unit tallies and evaluation.

    `loss(outputs, targets)` must be the MEAN over the batch's units, so that averaging the gradients of
    replicas' shards gives the gradient of the whole batch. `tally(outputs, targets)` returns device-side
    SUMS over the batch's units of per-unit values (e.g. {"acc": correct count}); the engine adds them over a
    pass and over ranks and divides by the units seen, so "train_acc" is a mean per unit.
    """

    unit: ClassVar[str] = "sample"
    epoch_split: ClassVar[str] = "test"  # the split `evaluate` scores after every epoch
    score_name: ClassVar[str] = "acc"  # what an item's score is: metrics are named <split>_<score_name>
    augments: ClassVar[bool] = False  # True: `transform` reads each unit's own seed (Batch.unit_seeds)

    @property
    @abstractmethod
    def train_units(self) -> int:
        """How many units one training epoch draws from."""

    origin: str  # the data_origin sentence
    provenance_record: Provenance | None = None  # the prepared dataset's record; None when the data was made

    @property
    def data_origin(self) -> str:
        """Where the data came from and whether it is the full official set, in one sentence."""
        return self.origin

    @property
    def provenance(self) -> dict[str, Any] | None:
        """The prepared dataset's provenance record as plain data for results files; None when none was read."""
        return None if self.provenance_record is None else self.provenance_record.model_dump()

    @abstractmethod
    def train_batch(self, epoch: int, indices: Tensor) -> Batch:
        """The training units at `indices` of `epoch`, compact and on the CPU (e.g. uint8 pixels)."""

    def transform(self, batch: Batch) -> Batch:
        """On the device, for training: turn a compact batch into model inputs (decode, normalise, augment); the
        targets stay as they are (a pipeline stage that never reads the inputs skips the transform).

        An augmentation draws each unit's randomness from its own `batch.unit_seeds` entry, never from a stream
        shared by the batch, so that one step under `single` equals the same step under a data-parallel strategy.
        """
        return batch

    @abstractmethod
    def loss(self, outputs: Tensor, targets: Tensor) -> Tensor:
        """The mean loss over the batch's units."""

    @abstractmethod
    def tally(self, outputs: Tensor, targets: Tensor) -> dict[str, Tensor]:
        """Sums over the batch's units of per-unit quality values, left on the device."""

    @abstractmethod
    def item_scores(self, model: nn.Module, split: str, device: torch.device) -> Tensor | None:
        """The whole plain model's score on every item of a split (a test image, a fixed episode), in evaluation
        mode, as a CPU tensor: the same items in the same order every time, so that two models pair up item by
        item. None: the data has nothing to score."""

    def evaluate(self, model: nn.Module, split: str, device: torch.device) -> dict[str, float]:
        """Score the whole plain model on a split: the mean item score and its 95% interval half-width, named after
        the split and `score_name` (e.g. test_acc, test_acc_ci95); empty when there is nothing to score."""
        return self.summarize(split, self.item_scores(model, split, device))

    def epoch_scores(self, model: nn.Module, device: torch.device) -> dict[str, float]:
        """The scores printed and plotted after every training epoch: `evaluate` on `epoch_split` by default."""
        return self.evaluate(model, self.epoch_split, device)

    def summarize(self, split: str, item_scores: Tensor | None) -> dict[str, float]:
        """Per-item scores of a split as its mean and 95% interval half-width (see `evaluate`)."""
        if item_scores is None:
            return {}
        mean, interval = mean_and_interval(item_scores)
        return {f"{split}_{self.score_name}": mean, f"{split}_{self.score_name}_ci95": interval}


@dataclass(frozen=True)
class Question:
    """The experiment a workload comes from, in its own terms: its seed document, title and question, and the
    strategy pairs whose comparison answers it (each: the first's rate against the second's)."""

    seed: str
    title: str
    question: str
    compared: tuple[tuple[str, str], ...] = ()


class Workload(ABC, Generic[SettingsT]):
    """What to build and train: a plain model, its optimiser and parameter groups, its data and settings (of type
    SettingsT, the workload's own subclass of TrainSettings)."""

    name: ClassVar[str]
    dataset: ClassVar[str | None]  # the dataset stages it needs; None for synthetic data
    generator_file: ClassVar[str | None] = None  # synthetic data: the source file that draws it, from the project root
    settings_model: ClassVar[type[TrainSettings]]
    primary_metric: ClassVar[str | None]  # the evaluate() key that speedup and report compare; None: time only
    question: ClassVar[Question]  # what the report page asks of it, and answers from its numbers

    @abstractmethod
    def build_model(self, settings: SettingsT) -> nn.Sequential:
        """The architecture as ordered blocks: no weights read, no device, no rank."""

    def model_holding(self, settings: SettingsT, state: dict[str, Tensor]) -> nn.Sequential:
        """The architecture holding `state`, on the CPU: built on the meta device first, so that no weight is drawn
        only to be overwritten (drawing ResNet-50's 25 million takes about a second). Every buffer of the model must
        be in its state dict (none registered with persistent=False)."""
        with torch.device("meta"):
            model = self.build_model(settings)
        model.to_empty(device="cpu").load_state_dict(state)
        return model

    def parameter_count(self, settings: SettingsT) -> int:
        """How many parameters the plain model trains (built on the meta device: nothing drawn)."""
        with torch.device("meta"):
            return sum(parameter.numel() for parameter in self.build_model(settings).parameters())

    @abstractmethod
    def unit_shape(self, settings: SettingsT) -> tuple[int, ...]:
        """The shape of one unit of model input after `transform` (for strategies that time blocks)."""

    def documented_cut(self, settings: SettingsT) -> tuple[int, ...] | None:
        """Blocks per stage where the source document cuts the model by hand (partition.balance `documented`); none."""
        return None

    def choices_beside_metrics(self, settings: SettingsT) -> dict[str, str]:
        """Choices a reader must see beside every metric of the workload (e.g. which pretrained weights); none."""
        return {}

    def prefetch(self, settings: SettingsT) -> None:
        """Get what `initialize` reads (e.g. pretrained weights) once, before any worker starts, or stop with what
        to do; nothing by default."""

    def initialize(self, model: nn.Module, settings: SettingsT) -> None:
        """Load weights into the freshly built model before a strategy applies (e.g. pretrained); none by default."""

    def param_groups(
        self, named_parameters: Iterable[tuple[str, nn.Parameter]], settings: SettingsT
    ) -> list[ParamGroup]:
        """How the parameters share learning rates, by the plain model's names; one group by default."""
        return [ParamGroup(params=[parameter for _, parameter in named_parameters])]

    @abstractmethod
    def optimizer(self, groups: list[dict[str, Any]], settings: SettingsT) -> torch.optim.Optimizer:
        """The optimiser over torch parameter groups (each already holding its `lr`)."""

    def lr_schedule(
        self, optimizer: torch.optim.Optimizer, settings: SettingsT, steps_per_epoch: int
    ) -> torch.optim.lr_scheduler.LRScheduler | None:
        """A schedule stepped after every optimiser step: settings.lr_schedule (none for `constant`)."""
        if settings.lr_schedule == "constant":
            return None
        return torch.optim.lr_scheduler.LambdaLR(
            optimizer,
            cosine_with_warmup(round(settings.lr_warmup_epochs * steps_per_epoch), settings.epochs * steps_per_epoch),
        )

    @abstractmethod
    def open(self, prepared: Path | None, settings: SettingsT) -> WorkloadData:
        """Open the prepared data. A synthetic workload draws its data when `prepared` is None; given a prepared
        dataset's folder (params.yaml `inputs`), it times on that dataset's training images instead."""
