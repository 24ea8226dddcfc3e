"""The shipped params.yaml on the machines people have: 1 to 8 devices per node, one node or two. Planning is ordinary
code, so a GPU box is a monkeypatched device count here; CPU devices run with `oversubscribe`."""

import re
from typing import Any
from unittest import mock

import pytest

from parabench.config import validate_params, with_overrides
from parabench.engine.check import check_all
from parabench.engine.plan import copies_sharing_the_batch, make_plan, warn_once
from parabench.errors import ConfigError, StrategyUnavailable


def shipped_on(base_params: dict[str, Any], accelerator: str, devices: int | str, nodes: int, **more: Any) -> Any:
    """The shipped params on `nodes` nodes of `devices` devices each (GPUs: a node that has exactly that many)."""
    overrides = {
        "hardware.accelerator": accelerator,
        "hardware.devices": devices,
        "hardware.nodes": nodes,
        "hardware.oversubscribe": True,
        "hardware.rendezvous": "10.0.0.1:29400" if nodes > 1 else None,
        **more,
    }
    return validate_params(with_overrides(base_params, overrides), "params.yaml")


def gpus(count: int) -> Any:
    """This test's machine as a node with `count` CUDA GPUs."""
    return mock.patch.multiple("torch.cuda", is_available=lambda: True, device_count=lambda: count)


@pytest.mark.parametrize("nodes", [1, 2])
@pytest.mark.parametrize("count", [1, 2, 3, 4, 6, 8])
def test_the_shipped_params_plan_on_every_gpu_count_and_skip_only_what_the_hardware_cannot_run(
    base_params, count, nodes
):
    """`devices: auto` on 1 to 8 GPUs per node, 1 or 2 nodes: the check stage passes; what cannot run is a skipped
    cell with its reason (a cut strategy on one GPU, 1F1B with fewer micro-batches than stages), never a stop."""
    with gpus(count):
        skipped = check_all(shipped_on(base_params, "cuda", "auto", nodes))
    cut_cells = [line for line in skipped if "model_parallel" in line or "pipeline" in line]
    if count == 1:
        assert any("needs at least 2 devices" in line for line in cut_cells), "one GPU: the cut cells are skipped"
        assert all("node with 2 GPUs or more" in line for line in cut_cells if "needs at least 2 devices" in line), (
            "on one GPU the fix is another node, not hardware.devices, which cannot exceed its GPUs"
        )
    else:
        for_lack_of_devices = [line for line in cut_cells if "'1f1b' needs at least as many micro-batches" not in line]
        assert not for_lack_of_devices, f"{count} GPUs: every cut cell runs (stages <= blocks): {for_lack_of_devices}"
    assert not any(": dp:" in line for line in skipped), "dp runs on GPUs"


@pytest.mark.parametrize(("count", "fashion_devices", "episode_devices"), [(8, 8, 2), (6, 4, 2), (3, 2, 2), (1, 1, 1)])
def test_auto_gives_a_data_parallel_run_the_most_devices_its_batch_divides_among(
    base_params, count, fashion_devices, episode_devices, caplog
):
    """fashion_mnist's 128 divides among 8 GPUs, 4 of 6, 2 of 3; miniimagenet's 2 episodes among 2: each says so. The
    benchmark's ceiling runs as many copies of single, so that the data-parallel runs have their bound."""
    warn_once.cache_clear()
    with gpus(count), caplog.at_level("WARNING", logger="parabench.plan"):
        params = shipped_on(base_params, "cuda", "auto", 1)
        fashion, episodes = (make_plan(params, workload, "train") for workload in ("fashion_mnist", "miniimagenet"))
        ceilings = [
            make_plan(params, workload, "benchmark", strategy_name="single", copies=count).devices
            for workload in ("fashion_mnist", "miniimagenet")
            if count > 1
        ]
    assert (fashion.devices, fashion.replicas, episodes.devices) == (fashion_devices, fashion_devices, episode_devices)
    assert ceilings == ([fashion_devices, episode_devices] if count > 1 else [])
    if episode_devices < count:
        assert re.search(rf"miniimagenet's strategy=ddp: .*runs on 2 of each node's {count} devices", caplog.text)


def test_a_ceiling_needs_two_copies_the_batch_divides_among():
    """An odd batch leaves no ceiling to time (one copy is single itself): the cell is skipped, with why."""
    assert copies_sharing_the_batch(128, 6, "run") == 4
    with pytest.raises(StrategyUnavailable, match=r"divides among no 2 to 4 side-by-side copies"):
        copies_sharing_the_batch(5, 4, "run")


@pytest.mark.parametrize("devices", [3, 4])
def test_devices_set_by_hand_that_a_batch_does_not_divide_among_stop_naming_the_override(base_params, devices):
    """Explicit devices are taken as asked: a batch that does not divide stops the check stage with the command."""
    with pytest.raises(
        ConfigError,
        match=rf"quick\.batch_size: \d+ does not divide .*multiple of {devices} .*-S scales\.\w+\.quick\.batch_size=",
    ):
        check_all(shipped_on(base_params, "cpu", devices, 1))


def test_eight_gpus_cut_a_six_block_model_into_six_stages(base_params):
    """partition.stages auto: one stage per device, at most one per block; the plan counts the devices it uses."""
    with gpus(8):
        params = shipped_on(base_params, "cuda", 8, 1)
        for strategy in ("model_parallel", "pipeline"):
            assert make_plan(params, "resnet50", "benchmark", strategy_name=strategy).devices == 6
        distributed = shipped_on(base_params, "cuda", 8, 1, **{"pipeline.engine": "distributed"})
        assert make_plan(distributed, "resnet50", "benchmark", strategy_name="pipeline").processes == 6


def test_the_distributed_pipeline_over_two_nodes_cuts_one_stage_per_process(base_params):
    """2 nodes x 4 GPUs, 6 blocks: 3 stages per node, 6 processes in all, each a stage."""
    with gpus(4):
        params = shipped_on(base_params, "cuda", 4, 2, **{"pipeline.engine": "distributed", "strategy": "pipeline"})
        plan = make_plan(params, "fashion_mnist", "train")
    assert (plan.processes_per_node, plan.processes, plan.devices) == (3, 6, 6)


@pytest.mark.parametrize(
    ("stages", "message"),
    [
        (7, r"into 7 stages \(partition\.stages\): .*only 6 blocks"),
        (3, r"cannot place partition\.stages: 3 stages on 2 device\(s\)"),
    ],
)
def test_partition_stages_beyond_blocks_or_devices_is_refused(base_params, stages, message):
    """An explicit stage count must fit the model and the devices."""
    with gpus(2):
        params = shipped_on(base_params, "cuda", 2, 1, **{"strategy": "model_parallel", "partition.stages": stages})
        with pytest.raises(ConfigError, match=message):
            check_all(params)


def test_an_odd_stage_count_over_two_nodes_is_refused(base_params):
    """The distributed pipeline runs as many stages on every node."""
    overrides = {"strategy": "pipeline", "pipeline.engine": "distributed", "partition.stages": 3}
    with gpus(2), pytest.raises(ConfigError, match=r"same number of stages on each of its 2 nodes.*multiple of 2"):
        check_all(shipped_on(base_params, "cuda", 2, 2, **overrides))


def test_more_devices_than_gpus_and_gloo_on_cuda_stop_before_any_work(base_params):
    """`single` would run, but the benchmark's copies of it could not: the plan refuses up front; so does gloo on
    CUDA, whose missing collectives would fail fsdp and the pipeline at their first step."""
    with gpus(2):
        with pytest.raises(ConfigError, match=r"hardware\.devices: 4 .*this node has 2"):
            check_all(shipped_on(base_params, "cuda", 4, 1, strategy="single"))
        with pytest.raises(ConfigError, match=r"hardware\.backend: 'gloo' with CUDA"):
            check_all(shipped_on(base_params, "cuda", 2, 1, **{"hardware.backend": "gloo"}))
