"""What a workload is: data, a plain model as ordered blocks, a loss, and its hyper-parameters per scale."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor, nn


class TrainSettings(BaseModel):
    """Hyper-parameters every workload has, at one scale."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    epochs: Annotated[int, Field(ge=1)]
    batch_size: Annotated[int, Field(ge=1)]
    lr: Annotated[float, Field(gt=0)]
    momentum: Annotated[float, Field(ge=0, lt=1)]
    weight_decay: Annotated[float, Field(ge=0)]
    scaling: Literal["weak", "strong"]
    train_subset: Annotated[int, Field(ge=1)] | None
    eval_batch_size: Annotated[int, Field(ge=1)]
    warmup_steps: Annotated[int, Field(ge=0)]
    seed: int


@dataclass(frozen=True)
class LabelledImages:
    """Images as uint8 (N, C, H, W) and integer labels (N,), decoded once by the prepare stage."""

    images: Tensor
    labels: Tensor

    def __len__(self) -> int:
        return len(self.labels)


@dataclass(frozen=True)
class Workload:
    """Everything the training loop needs to know about one experiment of the seeds."""

    name: str
    dataset: str
    input_shape: tuple[int, ...]
    settings_model: type[TrainSettings]
    build_model: Callable[[TrainSettings], nn.Sequential]
    load_data: Callable[[Path], tuple[LabelledImages, LabelledImages]]
    to_inputs: Callable[[Tensor], Tensor]
    loss: Callable[[Tensor, Tensor], Tensor]
