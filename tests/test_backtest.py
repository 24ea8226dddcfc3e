"""The back-test against published scaling tables (benchmarks/backtest.py): the setups file parses, every setup cites
its source, the prediction holds where it is known to (Horovod's three models, seed 001, torchgpipe's pipelines on
1, 2 and 4 GPUs), and a published balance's stage costs come from each layer's roofline (benchmarks/roofline.py)."""

import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from backtest import SETUPS, Outcome, backtest, recomputed  # noqa: E402
from roofline import Layer, stage_costs, torchgpipe_resnet101_layers  # noqa: E402


def test_every_setup_cites_its_source():
    setups = yaml.safe_load(SETUPS.read_text())["setups"]
    assert len(setups) >= 8 and all(setup["source"].strip() for setup in setups)


def test_the_prediction_reproduces_what_it_is_known_to():
    outcomes = {outcome.name: outcome for outcome in backtest(SETUPS)}
    for name in (
        "Horovod ResNet-101, 512 GPUs",
        "Horovod Inception V3, 512 GPUs",
        "Horovod VGG-16, 512 GPUs",
        "seed 001, ResNet-50 pipelined over 2 GPUs",
        "torchgpipe ResNet-101, pipeline-1 on a P40",
        "torchgpipe ResNet-101, pipeline-2 on P40s",
        "torchgpipe ResNet-101, pipeline-4 on P40s",
    ):
        assert outcomes[name].meets_goal, outcomes[name]
    assert outcomes["torchgpipe ResNet-101, pipeline-8 on P40s"].predicted > 4.294 * 1.1, "known miss (docs)"


def test_errors_are_points_of_efficiency_or_relative_speedups():
    assert Outcome("x", "efficiency", 0.90, 0.85).error == pytest.approx(-0.05)
    assert not Outcome("x", "efficiency", 0.90, 0.79).meets_goal
    assert Outcome("x", "speedup", 2.0, 2.3).error == pytest.approx(0.15)
    assert not Outcome("x", "speedup", 2.0, 2.3).meets_goal and Outcome("x", "speedup", 2.0, 2.1).meets_goal


def test_checkpointed_micro_batches_run_their_forward_again():
    """A forward is a third of a step's compute: torchgpipe's except_last recomputes all micro-batches but the last,
    so its one-device pipeline of 2 chunks pays a sixth more, and one of 1,667 chunks about a third more."""
    assert recomputed(4, "never") == 1
    assert recomputed(2, "except_last") == pytest.approx(1 + 1 / 6)
    assert recomputed(1667, "except_last") == pytest.approx(1 + 1 / 3, abs=1e-3)
    assert recomputed(4, "always") == pytest.approx(1 + 1 / 3)


def test_a_layer_takes_the_longer_of_its_compute_and_its_memory_traffic():
    convolution = Layer(flops=2e9, elements_in=1000, elements_out=1000)  # 8 kB in fp32
    norm = Layer(flops=0.0, elements_in=10**6, elements_out=10**6)  # 8 MB
    assert convolution.seconds(peak_flops=1e12, bandwidth=1e9) == pytest.approx(2e-3)
    assert norm.seconds(peak_flops=1e12, bandwidth=1e9) == pytest.approx(8e-3)


def test_torchgpipe_resnet101_is_its_370_layers_of_7_8_billion_multiply_adds():
    layers = torchgpipe_resnet101_layers()
    assert len(layers) == 370
    assert sum(layer.flops for layer in layers) / 2 == pytest.approx(7.8e9, rel=0.01)  # He et al. 2016, Table 1
    assert layers[0].elements_in == 3 * 224 * 224 and layers[-1].elements_out == 1000
    identities = layers[4 : 4 + 33 * 11 : 11]  # after the stem's 4 layers, the first of each bottleneck's 11
    assert len(identities) == 33 and all(layer == Layer(0.0, 0, 0) for layer in identities), "a stash moves nothing"


def test_a_balance_of_equal_layer_counts_is_not_one_of_equal_costs():
    """ResNet-101's early layers work on large activations: on a P40's roofline its first 185 layers (the stem,
    layer1, layer2 and the start of layer3) cost more than its last 185."""
    first, last = stage_costs(torchgpipe_resnet101_layers(), [185, 185], 11.76e12, 346e9)
    assert first > 1.05 * last
    with pytest.raises(ValueError, match="all 370 layers"):
        stage_costs(torchgpipe_resnet101_layers(), [100, 100], 11.76e12, 346e9)
