"""Shared test setups: a CPU machine and strategy setup, tiny fashion_mnist plans, data a working loop must learn, and
the records the workers write."""

from typing import Any

import torch

from parabench.engine.plan import RunPlan
from parabench.engine.timing import summarize
from parabench.records import RunRecord
from parabench.runtime.hardware import Machine
from parabench.runtime.process import Process
from parabench.strategies.base import StrategySetup
from parabench.strategies.options import PartitionOptions, PipelineOptions
from parabench.strategies.registry import STRATEGIES
from parabench.workloads.fashion_mnist import FashionMnistData, FashionMnistSettings

CPU_PROCESS = Process(rank=0, local_rank=0, world_size=1, device=torch.device("cpu"))


def cpu_setup(
    devices: int = 1,
    split_size: int = 8,
    engine: str = "inprocess",
    schedule: str = "gpipe",
    balance: str = "parameters",
    blocks: int = 6,
    batch_shape: tuple[int, ...] = (8, 1, 12, 12),
    threads: int = 1,
) -> StrategySetup:
    """A CPU machine with `devices` (virtual) devices, `threads` per process, and the given strategy options."""
    machine = Machine(
        accelerator="cpu", devices=devices, nodes=1, backend="gloo", cores=1, max_restarts=0, threads_setting=threads
    )
    return StrategySetup(
        machine=machine,
        partition=PartitionOptions(balance=balance),
        pipeline=PipelineOptions(engine=engine, split_size=split_size, schedule=schedule),
        blocks=blocks,
        batch_shape=batch_shape,
    )


def tiny_settings(**changes: Any) -> FashionMnistSettings:
    """fashion_mnist hyper-parameters small enough for a test: width 4, batch 16."""
    values = {
        "epochs": 2,
        "batch_size": 16,
        "lr": 0.05,
        "momentum": 0.9,
        "weight_decay": 0.0,
        "scaling": "strong",
        "train_subset": None,
        "eval_batch_size": 32,
        "epoch_test_images": None,
        "warmup_steps": 1,
        "seed": 0,
        "width": 4,
    }
    return FashionMnistSettings(**{**values, **changes})


def tiny_plan(
    strategy: str = "single", setup: StrategySetup | None = None, role: str = "train", **changes: Any
) -> RunPlan:
    """A fashion_mnist plan on `setup` (one CPU device by default), the global batch being settings.batch_size."""
    settings = tiny_settings(**changes)
    setup = setup or cpu_setup(batch_shape=(settings.batch_size, 1, 28, 28))
    chosen = STRATEGIES[strategy]
    return RunPlan(
        role=role,
        workload_name="fashion_mnist",
        strategy_name=strategy,
        dataset="fashion_mnist",
        scale="tiny",
        settings=settings,
        setup=setup,
        replicas=chosen.data_replicas(setup),
        global_batch=settings.batch_size,
        lr=settings.lr,
    )


def separable_images(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Noisy images whose label says which half is bright (left: 0, right: 1), so a working loop must learn them.

    Both classes have the same mean brightness: BatchNorm's statistics carry no hint of the labels in a batch.
    """
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 2, (count,), generator=generator)
    images = torch.rand(count, 1, 28, 28, generator=generator) * 60
    columns = torch.arange(28).view(1, 1, 1, 28)
    bright_half = (columns >= 14) == labels.view(-1, 1, 1, 1).bool()
    return (images + bright_half * 150).to(torch.uint8), labels


def separable_data(train: int = 128, test: int = 64, seed: int = 0, eval_batch_size: int = 32) -> FashionMnistData:
    """fashion_mnist's data type holding separable images: `train` to learn from, `test` to score."""
    train_images, train_labels = separable_images(train, seed)
    test_images, test_labels = separable_images(test, seed + 1)
    return FashionMnistData(
        train_images,
        train_labels,
        test_images,
        test_labels,
        eval_batch_size,
        "separable test images generated in the test",
    )


def run_record(strategy: str, step_durations: list[float], devices: int = 1, **fields: Any) -> RunRecord:
    """A training run's record as the worker writes it: `strategy` on fashion_mnist with these steps, one epoch of
    them, a global batch of 100, nothing contended; `fields` replace any of the rest."""
    steps = summarize(step_durations)
    values: dict[str, Any] = {
        "workload": "fashion_mnist",
        "strategy": strategy,
        "processes": devices,
        "devices": devices,
        "replicas": devices,
        "global_batch": 100,
        "lr": 0.1,
        "accumulate": 1,
        "precision": "32",
        "activation_checkpointing": "none",
        "compile": False,
        "scale": "quick",
        "unit": "sample",
        "data_origin": "the full Fashion-MNIST",
        "data_provenance": None,
        "data_digest": "0123456789abcdef",
        "labels": {},
        "epochs": 1,
        "train_time_s": steps.total,
        "wall_time_s": steps.total + 20,
        "units_per_s": 100 / steps.median,
        "step_time_s": steps,
        "step_durations": step_durations,
        "final_epoch": {"train_loss": 0.5},
        "peak_memory_mb": {"rank0_cpu": 100.0},
        "memory_kind": "cpu_max_rss",
        "other_cpu_share": 0.01,
        "contended": False,
        "load_average_1m": 0.5,
        "resumed_after_epoch": None,
        "restarts": 0,
        "strategy_details": {},
        "environment": {"cpu_model": "test"},
    }
    return RunRecord(**(values | fields))
