"""params.yaml validation: every bad value stops with one message naming the key, the value and the fix."""

from typing import get_args

import pytest
import torch

from parabench.config import load_params
from parabench.engine import check
from parabench.engine.cells import Cell, plan_cell
from parabench.engine.check import check_all
from parabench.engine.plan import make_plan
from parabench.errors import ConfigError, StrategyUnavailable
from parabench.runtime.hardware import resolve
from parabench.strategies.options import StrategyName
from parabench.strategies.registry import STRATEGIES
from parabench.workloads import WORKLOADS
from parabench.workloads.contract import WorkloadName


def test_committed_params_are_valid(base_params, write_params):
    params = load_params(write_params(base_params))
    check_all(params)
    assert (params.strategy, params.reference.strategy) == ("ddp", "single")


def test_unknown_strategy_lists_the_valid_ones(base_params, write_params):
    base_params["strategy"] = "magic"
    with pytest.raises(ConfigError) as err:
        load_params(write_params(base_params))
    message = str(err.value)
    assert "strategy" in message and "'magic'" in message
    assert "'single'" in message and "'ddp'" in message
    assert "params.yaml" in message


def test_unknown_reference_strategy(base_params, write_params):
    base_params["reference"]["strategy"] = "fastest"
    with pytest.raises(ConfigError, match=r"reference\.strategy: 'fastest' is not valid"):
        load_params(write_params(base_params))


@pytest.mark.parametrize("devices", [0, -2])
def test_devices_below_one(base_params, write_params, devices):
    base_params["hardware"]["devices"] = devices
    with pytest.raises(ConfigError, match=r"hardware\.devices: "):
        load_params(write_params(base_params))


def test_unknown_scale_names_the_defined_ones(base_params, write_params):
    base_params["scale"] = "huge"
    with pytest.raises(ConfigError) as err:
        load_params(write_params(base_params))
    assert "scale: 'huge'" in str(err.value) and "paper, quick" in str(err.value)


def test_missing_key_is_named(base_params, write_params):
    del base_params["scales"]["fashion_mnist"]["quick"]["lr"]
    with pytest.raises(ConfigError, match=r"scales\.fashion_mnist\.quick\.lr: missing"):
        load_params(write_params(base_params))


def test_misspelt_key_is_named(base_params, write_params):
    base_params["hardware"]["device"] = 2
    with pytest.raises(ConfigError, match=r"hardware\.device: unknown key"):
        load_params(write_params(base_params))


def test_batch_not_divisible_by_processes(base_params, write_params):
    base_params["strategy"] = "ddp"
    base_params["hardware"].update(accelerator="cpu", devices=3)
    base_params["scales"]["fashion_mnist"]["quick"].update(batch_size=128, scaling="strong")
    params = load_params(write_params(base_params))
    with pytest.raises(ConfigError) as err:
        check_all(params)
    message = str(err.value)
    assert "scales.fashion_mnist.quick.batch_size: 128" in message and "3 data-parallel replicas" in message
    assert "strategy=ddp" in message


def test_weak_scaling_multiplies_batch_and_lr(base_params, write_params):
    base_params["strategy"] = "ddp"
    base_params["scale"] = "paper"
    base_params["hardware"].update(accelerator="cpu", devices=2)
    params = load_params(write_params(base_params))
    plan = make_plan(params, "fashion_mnist", "train", machine=resolve(params.hardware))
    assert (plan.processes, plan.replicas, plan.global_batch) == (2, 2, 512)
    assert plan.lr == pytest.approx(0.2)
    reference = make_plan(params, "fashion_mnist", "reference", machine=resolve(params.hardware))
    assert (reference.processes, reference.global_batch, reference.lr) == (1, 256, 0.1)


def test_local_data_source_must_exist(base_params, write_params, tmp_path):
    base_params["data"]["fashion_mnist"]["source"] = str(tmp_path / "nowhere")
    with pytest.raises(ConfigError, match=r"data\.fashion_mnist\.source: .*nor an existing folder"):
        load_params(write_params(base_params))


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_requested_without_cuda(base_params, write_params):
    base_params["hardware"]["accelerator"] = "cuda"
    params = load_params(write_params(base_params))
    with pytest.raises(ConfigError, match=r"hardware\.accelerator: 'cuda'.*auto or cpu"):
        check_all(params)


def test_several_nodes_need_a_rendezvous(base_params, write_params):
    base_params["hardware"]["nodes"] = 2
    with pytest.raises(ConfigError, match=r"hardware\.nodes: 2 needs hardware\.rendezvous"):
        load_params(write_params(base_params))
    base_params["hardware"].update(rendezvous="10.0.0.1:29400", devices=1)  # 2 replicas: every batch divides
    check_all(load_params(write_params(base_params)))


@pytest.mark.parametrize("rendezvous", ["10.0.0.1", "host:port", "a b:1"])
def test_a_rendezvous_is_host_colon_port(base_params, write_params, rendezvous):
    base_params["hardware"].update(nodes=2, rendezvous=rendezvous)
    with pytest.raises(ConfigError, match=r"hardware\.rendezvous: "):
        load_params(write_params(base_params))


def test_not_yaml(write_params, tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("strategy: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_params(path)


def test_dp_without_cuda_stops_and_suggests_ddp(base_params, write_params):
    base_params["strategy"] = "dp"
    params = load_params(write_params(base_params))
    with pytest.raises(StrategyUnavailable, match=r"'dp'.*CUDA.*ddp"):
        check_all(params)


@pytest.mark.parametrize("strategy", ["model_parallel", "pipeline"])
def test_cut_strategies_need_two_devices(base_params, write_params, strategy):
    base_params["strategy"] = strategy
    base_params["hardware"].update(accelerator="cpu", devices=1)
    with pytest.raises(ConfigError, match=rf"{strategy} needs at least 2 devices \(hardware\.devices\)"):
        check_all(load_params(write_params(base_params)))


@pytest.mark.parametrize("strategy", ["pipeline", "single"])
def test_split_size_larger_than_the_batch_whatever_the_strategy(base_params, write_params, strategy):
    """The micro-batch must fit the batch (the global batch under weak scaling is only larger): params.yaml's rule,
    named with the workload's entry, the batch it exceeds and the fix."""
    base_params["strategy"] = strategy
    base_params["pipeline"]["split_size"]["fashion_mnist"] = 100000
    path = write_params(base_params)
    with pytest.raises(ConfigError) as err:
        load_params(path)
    header, problem, fix = str(err.value).splitlines()
    assert header == f"{path} is invalid (1 problem):" and fix.startswith(f"Fix {path} ")
    assert problem.startswith("  - pipeline.split_size.fashion_mnist: 100000 ") and "batch_size: 128" in problem
    assert problem.endswith("set it to at most 128"), problem
    base_params["pipeline"]["split_size"]["fashion_mnist"] = 128
    base_params["pipeline"]["split_size"]["miniimagenet"] = 3
    with pytest.raises(ConfigError, match=r"pipeline\.split_size\.miniimagenet: 3 .*set it to at most 2\n"):
        load_params(write_params(base_params))


def test_each_workload_gets_its_own_split_size(base_params, write_params):
    params = load_params(write_params(base_params))
    assert {name: params.pipeline.for_workload(name).split_size for name in params.inputs} == {
        "fashion_mnist": 32,
        "miniimagenet": 1,
        "hotdog": 8,
        "resnet50": 2,
    }
    assert make_plan(params, "hotdog", "train").setup.pipeline.split_size == 8


def test_the_distributed_engine_s_rule_names_the_workload_s_entry(base_params, write_params):
    """A micro-batch that fits the batch but does not divide it is the distributed schedules' rule, checked when the
    run is planned: the message names the workload's own entry and the command that sets it."""
    base_params["hardware"].update(devices=2)
    base_params["pipeline"].update(engine="distributed")
    base_params["pipeline"]["split_size"]["fashion_mnist"] = 5
    params = load_params(write_params(base_params))
    with pytest.raises(
        ConfigError,
        match=r"pipeline\.split_size\.fashion_mnist: 5 does not divide .*-S pipeline\.split_size\.fashion_mnist=4`",
    ):
        make_plan(params, "fashion_mnist", "train", strategy_name="pipeline")


def test_split_size_below_one(base_params, write_params):
    base_params["pipeline"]["split_size"]["hotdog"] = 0
    with pytest.raises(ConfigError, match=r"pipeline\.split_size\.hotdog: 0"):
        load_params(write_params(base_params))


def test_split_size_names_every_workload_and_only_workloads(base_params, write_params):
    del base_params["pipeline"]["split_size"]["resnet50"]
    with pytest.raises(ConfigError, match=r"pipeline\.split_size: no entry for resnet50: .*add e\.g\. `resnet50: 1`"):
        load_params(write_params(base_params))
    base_params["pipeline"]["split_size"].update(resnet50=8, cifar10=4)
    with pytest.raises(ConfigError, match=r"pipeline\.split_size: cifar10 names no workload"):
        load_params(write_params(base_params))


def test_a_split_size_that_is_not_one_entry_per_workload_is_refused_naming_the_key(base_params, write_params):
    base_params["pipeline"].update(split_size=32)
    with pytest.raises(ConfigError, match=r"pipeline\.split_size: 32 \(int\) is not a mapping"):
        load_params(write_params(base_params))
    base_params["pipeline"].update(split_size={"fashion_mnist": 32}, split_sizes={"resnet50": 4})
    with pytest.raises(ConfigError, match=r"pipeline\.split_sizes.*did you mean 'split_size'"):
        load_params(write_params(base_params))


def test_the_bottleneck_encoder_needs_width_64(base_params, write_params):
    base_params["scales"]["miniimagenet"]["quick"].update(encoder="bottleneck", width=32)
    with pytest.raises(ConfigError, match=r"scales\.miniimagenet\.quick: encoder 'bottleneck' .*set width to 64"):
        load_params(write_params(base_params))
    base_params["scales"]["miniimagenet"]["quick"]["width"] = 64
    assert load_params(write_params(base_params)).settings("miniimagenet").width == 64


def test_unknown_schedule_lists_the_valid_ones(base_params, write_params):
    base_params["pipeline"]["schedule"] = "zigzag"
    with pytest.raises(ConfigError, match=r"pipeline\.schedule: 'zigzag' .*'gpipe' or '1f1b'"):
        load_params(write_params(base_params))


def test_benchmark_lists_each_strategy_once(base_params, write_params):
    base_params["benchmark"]["strategies"] = ["single", "ddp", "single"]
    with pytest.raises(ConfigError, match=r"benchmark\.strategies: .*lists a strategy twice"):
        load_params(write_params(base_params))


def test_a_misspelt_top_level_key_names_the_one_meant(base_params, write_params):
    base_params["stratgy"] = base_params.pop("strategy")
    with pytest.raises(ConfigError) as err:
        load_params(write_params(base_params))
    assert "stratgy: unknown key" in str(err.value) and "did you mean 'strategy'" in str(err.value)
    assert "strategy: missing" in str(err.value)


def test_a_misspelt_key_beside_the_real_one_is_refused(base_params, write_params):
    base_params["hardware"]["devics"] = 4
    with pytest.raises(ConfigError, match=r"hardware\.devics: .*did you mean 'devices'"):
        load_params(write_params(base_params))


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("batch_size", True, r"batch_size: True \(bool\) is not a whole number"),
        ("lr", True, r"lr: True \(bool\) is not a number"),
        ("lr", float("inf"), r"lr: inf and nan are not valid values"),
        ("lr", float("nan"), r"lr: inf and nan are not valid values"),
        ("epochs", 2.5, r"epochs: 2\.5 \(float\) is not a whole number"),
    ],
)
def test_types_are_strict(base_params, write_params, key, value, expected):
    base_params["scales"]["fashion_mnist"]["quick"][key] = value
    with pytest.raises(ConfigError, match=rf"scales\.fashion_mnist\.quick\.{expected}"):
        load_params(write_params(base_params))


def test_a_training_subset_smaller_than_a_batch_is_refused_up_front(base_params, write_params):
    base_params["scales"]["fashion_mnist"]["quick"].update(train_subset=100, batch_size=128)
    with pytest.raises(ConfigError, match=r"train_subset: 100 is smaller than batch_size: 128"):
        load_params(write_params(base_params))


def test_more_processes_than_cores_needs_an_explicit_override(base_params, write_params):
    cores = resolve(load_params(write_params(base_params)).hardware).cores
    base_params["strategy"] = "ddp"
    base_params["hardware"].update(accelerator="cpu", devices=cores * 32)
    base_params["scales"]["fashion_mnist"]["quick"]["batch_size"] = cores * 32 * 4
    base_params["scales"]["hotdog"]["quick"]["batch_size"] = cores * 32
    base_params["scales"]["resnet50"]["quick"]["batch_size"] = cores * 32
    base_params["scales"]["miniimagenet"]["quick"]["batch_size"] = cores * 32
    with pytest.raises(ConfigError, match=rf"start {cores * 32} worker processes .*hardware\.oversubscribe: true"):
        check_all(load_params(write_params(base_params)))
    base_params["hardware"]["oversubscribe"] = True
    check_all(load_params(write_params(base_params)))


def test_every_workload_reads_what_inputs_names(base_params, write_params):
    params = load_params(write_params(base_params))
    assert {name: params.dataset_read(name) for name in params.inputs} == {
        "fashion_mnist": "fashion_mnist",
        "miniimagenet": "miniimagenet",
        "hotdog": "hotdog",
        "resnet50": None,
    }
    base_params["inputs"]["resnet50"] = "data/prepared/hotdog"
    params = load_params(write_params(base_params))
    assert make_plan(params, "resnet50", "train").dataset == "hotdog", "resnet50 times hotdog's real pixels"


@pytest.mark.parametrize(
    ("workload", "value", "expected"),
    [
        (
            "resnet50",
            "data/prepared/hotdg",
            r"inputs\.resnet50: 'data/prepared/hotdg' .*random_images\.py .*data/prepared/hotdog",
        ),
        (
            "fashion_mnist",
            "data/prepared/hotdog",
            r"inputs\.fashion_mnist: 'data/prepared/hotdog' .*one of: data/prepared/fashion_mnist \(that dataset\)\n",
        ),
        ("hotdog", "../../etc", r"inputs\.hotdog: '\.\./\.\./etc' is not what hotdog can read"),
    ],
)
def test_inputs_a_workload_cannot_read_are_refused_with_its_choices(
    base_params, write_params, workload, value, expected
):
    base_params["inputs"][workload] = value
    with pytest.raises(ConfigError, match=expected):
        load_params(write_params(base_params))


def test_inputs_name_the_workloads_to_run_at_least_one_and_only_workloads(base_params, write_params):
    del base_params["inputs"]["resnet50"]
    assert set(load_params(write_params(base_params)).inputs) == {"fashion_mnist", "miniimagenet", "hotdog"}
    base_params["inputs"] = {}
    with pytest.raises(ConfigError, match=r"inputs: no workload to run.*`fashion_mnist: data/prepared/fashion_mnist`"):
        load_params(write_params(base_params))
    base_params["inputs"] = {"cifar10": "data/prepared/x"}
    with pytest.raises(ConfigError, match=r"inputs: cifar10 names no workload"):
        load_params(write_params(base_params))


def test_the_check_plans_only_the_workloads_listed(base_params, write_params, monkeypatch):
    planned = []
    monkeypatch.setattr(check, "make_plan", lambda params, workload, role, machine: planned.append(workload))
    base_params["inputs"] = {"resnet50": "src/parabench/workloads/random_images.py"}
    check.check_all(load_params(write_params(base_params)))
    assert planned == ["resnet50", "resnet50"]


@pytest.mark.parametrize(("seed", "rule"), [(-1, "at least 0"), (2**32, "less than 4294967296")])
def test_a_seed_is_one_32_bit_word(base_params, write_params, seed, rule):
    base_params["scales"]["fashion_mnist"]["quick"]["seed"] = seed
    with pytest.raises(ConfigError, match=rf"scales\.fashion_mnist\.quick\.seed: {seed} is out of range.*{rule}"):
        load_params(write_params(base_params))


def test_a_value_out_of_range_says_the_range_in_words(base_params, write_params):
    base_params["benchmark"]["min_turns"] = 1
    with pytest.raises(
        ConfigError, match=r"benchmark\.min_turns: 1 is out of range; write a value at least 2\n"
    ) as raised:
        load_params(write_params(base_params))
    assert "Input should" not in str(raised.value), "pydantic's words are not the user's"


@pytest.mark.parametrize(
    ("section", "key", "new"),
    [(("partition",), "balance", "documented"), (("scales", "miniimagenet", "quick"), "encoder", "bottleneck")],
)
def test_a_value_no_choice_has_is_refused_naming_the_choices(base_params, write_params, section, key, new):
    """A value the key does not take (here "seed", no choice's name) is refused with the key and its choices."""
    place = base_params
    for part in section:
        place = place[part]
    place[key] = "seed"
    with pytest.raises(ConfigError) as refused:
        load_params(write_params(base_params))
    line = next(line for line in str(refused.value).splitlines() if f"{key}:" in line)
    assert ".".join([*section, key]) in line and "'seed'" in line and new in line, line


def test_the_prediction_s_links_are_checked_up_front_by_name(base_params, write_params):
    base_params["predict"]["network"] = "ethernet2.5"
    with pytest.raises(ConfigError, match=r"predict\.network: 'ethernet2\.5' .*ethernet25"):
        check_all(load_params(write_params(base_params)))
    base_params["predict"].update(network="infiniband400", interconnect="nvlink4")
    check_all(load_params(write_params(base_params)))
    base_params["predict"].update(network="measured", interconnect="measured")
    check_all(load_params(write_params(base_params)))


def test_a_link_can_be_given_by_its_numbers_and_a_wrong_number_is_named(base_params, write_params):
    given = {"bandwidth_gb_per_s": 64, "latency_us": 3, "source": "PCI Express 5.0 x16"}
    base_params["predict"].update(interconnect=given, network={"bandwidth_gb_per_s": 1.25, "latency_us": 20})
    params = load_params(write_params(base_params))
    check_all(params)
    assert (params.predict.interconnect.bandwidth_gb_per_s, params.predict.interconnect.latency_us) == (64, 3)
    assert params.predict.network.source == "given in params.yaml", "the source is optional"
    base_params["predict"]["interconnect"] = {"bandwith_gb_per_s": 64, "latency_us": 3}
    with pytest.raises(ConfigError) as misspelt:
        load_params(write_params(base_params))
    assert "predict.interconnect.bandwith_gb_per_s: unknown key (value 64); did you mean 'bandwidth_gb_per_s'?" in str(
        misspelt.value
    ), "the key as params.yaml spells it, without pydantic's union tag"
    base_params["predict"]["interconnect"] = {"bandwidth_gb_per_s": 0, "latency_us": 3}
    with pytest.raises(ConfigError, match=r"predict\.interconnect\.bandwidth_gb_per_s: 0 is out of range"):
        load_params(write_params(base_params))


def test_the_schema_names_the_registries_strategies_and_workloads_in_their_order():
    """params.yaml's choices are typed Literals (mypy reads them); the registries are what runs: one list each."""
    assert get_args(StrategyName) == tuple(STRATEGIES)
    assert get_args(WorkloadName) == tuple(WORKLOADS)


def test_the_cells_are_timed_at_the_seeds_sizes_on_a_gpu_and_at_the_run_s_scale_on_the_cpu(base_params, write_params):
    """benchmark.scale_on: on CUDA a quick-scale step is Python's launches (7-40 ms on an H200), so the cells time the
    paper scale there; on the CPU the run's own scale. The choice reaches every cell's plan."""
    params = load_params(write_params(base_params))
    assert params.timing_scale("cpu") == "quick" and params.timing_scale("cuda") == "paper"
    quick, paper = (
        plan_cell(params.model_dump(), Cell("fashion_mnist", "single"), scale).plan for scale in ("quick", "paper")
    )
    assert quick is not None and paper is not None
    assert (quick.scale, quick.global_batch) == ("quick", 128) and (paper.scale, paper.global_batch) == ("paper", 256)
    base_params["benchmark"]["scale_on"]["cuda"] = "run"
    assert load_params(write_params(base_params)).timing_scale("cuda") == "quick", "run: params.yaml's scale"


def test_a_scale_the_workloads_do_not_define_is_refused_in_scale_on(base_params, write_params):
    base_params["benchmark"]["scale_on"]["cuda"] = "huge"
    with pytest.raises(ConfigError, match=r"benchmark\.scale_on\.cuda: 'huge' is not defined for workload"):
        load_params(write_params(base_params))
