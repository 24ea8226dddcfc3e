"""Real benchmark cells (single, the ceiling's copies, ddp on 2 gloo ranks, model_parallel) record where each rank's
step went, and the benchmark splits every cell's step into parts that add up to it (tests/test_benchmark_report.py
checks the arithmetic on set figures)."""

from pathlib import Path

import pytest
import torch

from parabench.engine.cells import Cell, CellRuns
from parabench.engine.plan import RunPlan
from parabench.engine.timed_cell import TimedCell
from parabench.engine.timing import PHASES
from parabench.records import CellFigures, CellRun
from parabench.report.benchmark import summarize_cells
from parabench.runtime.process import Process
from tests.multiprocess import run_ranks
from tests.setups import CPU_PROCESS, cpu_setup, separable_data, tiny_plan

WARMUP, TIMED = 1, 4


def cell_plan(cell: Cell) -> RunPlan:
    plan = tiny_plan(cell.strategy, cpu_setup(devices=2, batch_shape=(16, 1, 28, 28)), "benchmark")
    return plan.model_copy(update={"copies": cell.copies})


def measure_rank(rank: int, world_size: int, cell: Cell, out: Path) -> None:
    """Set the cell up as its job's worker would, time TIMED turns of one step, and write its run (rank 0)."""
    torch.set_num_threads(1)
    process = Process(rank, rank, world_size, torch.device("cpu")) if world_size > 1 else CPU_PROCESS
    plan = cell_plan(cell)
    initial_weights = plan.workload.build_model(plan.settings).state_dict()
    timed = TimedCell(plan, process, separable_data(), initial_weights, WARMUP, {"cpu": 0.0})
    turns = [timed.turn(1) for _ in range(TIMED)]
    if timed.setup is not None:
        run = CellRun(**dict(timed.setup), turns=[turn for turn in turns if turn is not None])
        out.write_text(run.model_dump_json())


def measured(cell: Cell, out: Path) -> CellRuns:
    plan = cell_plan(cell)
    if plan.distributed or cell.copies > 1:
        run_ranks(plan.processes, measure_rank, cell, out)
    else:
        measure_rank(0, 1, cell, out)
    return CellRuns(cell, plan, run=CellRun.model_validate_json(out.read_text()))


@pytest.mark.slow
def test_every_cell_s_step_splits_into_parts_that_add_up_to_it(tmp_path):
    cells = [
        Cell("fashion_mnist", "single"),
        Cell("fashion_mnist", "ddp"),
        Cell("fashion_mnist", "model_parallel"),
        Cell("fashion_mnist", "single", copies=2),
    ]
    entries = [measured(cell, tmp_path / f"{number}.json") for number, cell in enumerate(cells)]
    for entry in entries:
        assert entry.run is not None and len(entry.run.turns) == TIMED
        for turn in entry.run.turns:
            ranks = turn.phase_durations
            assert len(ranks) == len(turn.signs) == entry.plan.processes and all(len(steps) == 1 for steps in ranks)
            (duration,) = turn.step_durations
            assert all(set(ranks[rank][0]) == set(PHASES) for rank in range(len(ranks)))
            slowest_own = max(sum(ranks[rank][0].values()) for rank in range(len(ranks)))
            assert slowest_own == pytest.approx(duration, rel=1e-9), "a step's phases add up to it on every rank"
            assert all(signs[0].cpu_s > 0 for signs in turn.signs), "each rank's CPU time over the step"
    results = summarize_cells(entries).cells
    for label, figures in results.items():
        assert isinstance(figures, CellFigures), label
        split = figures.time_split_s
        assert all(seconds >= 0 for seconds in split.values()), (label, split)
        assert figures.time_split_vs_step == pytest.approx(sum(split.values()) / figures.step_time_s.median - 1)
    kept = {label: figures.saved_for_backward_mb for label, figures in results.items()}
    assert set(kept["ddp"]) == {"rank0", "rank1"} and kept["ddp"]["rank0"] > 0, "each rank counts what it kept"
    assert kept["ddp"]["rank0"] < kept["single"]["rank0"], "a replica keeps its half batch's activations"
    assert set(results["ddp"].time_split_s) == {"input", "compute", "communication", "optimizer", "idle"}
    assert results["ddp"].gradient_allreduce_s > 0
    assert 0 <= results["ddp"].communication_hidden_share <= 1
    assert set(results["single"].time_split_s) == {"input", "compute", "optimizer", "idle"}
    assert results["single"].time_split_s["idle"] == 0, "one process waits for nobody"
    assert set(results["model_parallel"].time_split_s) == {"input", "compute", "optimizer", "idle"}, (
        "one process on one CPU moves nothing between its stages"
    )
    assert results["ceiling"].gradient_allreduce_s is None, "independent copies communicate nothing"
    per_unit = {
        label: (figures.input_bytes_per_unit, figures.output_bytes_per_unit) for label, figures in results.items()
    }
    assert per_unit["single"][1] == 10 * 4, "ten classes' float32 logits a sample"
    assert per_unit["single"][0] >= 28 * 28 * 4, "a float32 image of 28x28 pixels or more a sample"
    assert per_unit["ddp"] == per_unit["ceiling"] == per_unit["model_parallel"] == per_unit["single"], (
        "a unit's bytes, whatever share of the batch a process holds"
    )
