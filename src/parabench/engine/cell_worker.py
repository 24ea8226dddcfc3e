"""A warm benchmark worker: one process (or one rank of a torchrun job) that times cell after cell, as its inbox
hands them over, in one process group, resetting between cells what a cell could leave to the next.

    python -m parabench.engine.cell_worker INBOX

The launcher (engine/cell_jobs.py) writes `INBOX/<n>.json` for the n-th cell (its plan, warm-up and timed steps,
and where rank 0 writes what it measured) and `INBOX/<n>.json` = {"stop": true} to end the job. Every rank reads
every command, so all ranks run the same cells in the same order.
"""

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor

from parabench.cli import stage_main
from parabench.engine.cell_jobs import READY, wait_until
from parabench.engine.plan import RunPlan
from parabench.engine.training import measure_cell
from parabench.runtime.memory import release_free_heap
from parabench.runtime.orphans import die_with_parent
from parabench.runtime.process import Process, start, stop
from parabench.strategies.partition import remembered_block_times
from parabench.workloads import WorkloadData


def next_command(inbox: Path, number: int) -> dict[str, Any]:
    """The `number`-th command, once the launcher has written it (it renames a finished file into place)."""
    path = inbox / f"{number}.json"
    wait_until(path.exists)
    command: dict[str, Any] = json.loads(path.read_text())
    return command


_opened: dict[str, tuple[WorkloadData, dict[str, Tensor]]] = {}


def data_and_initial_weights(plan: RunPlan) -> tuple[WorkloadData, dict[str, Tensor]]:
    """The plan's data and the plain model's initial weights (seeded, built and initialised by the workload), made
    once for the consecutive cells of the same workload and settings (the strategy aside): every cell of a
    benchmark, without reading the prepared arrays or drawing the weights again."""
    key = plan.model_dump_json(include={"workload_name", "dataset", "scale", "settings"})
    if key not in _opened:
        _opened.clear()
        torch.manual_seed(plan.settings.seed)
        model = plan.workload.build_model(plan.settings)
        plan.workload.initialize(model, plan.settings)
        _opened[key] = plan.open_data(), model.state_dict()
    return _opened[key]


def reset_between_cells(plan: RunPlan, process: Process) -> None:
    """What a cell starts from, whichever cell ran before it in this process: the plan's threads and seed, no object
    of the last cell alive, the heap's free memory handed back to the system, the device's cache emptied."""
    torch.set_num_threads(plan.threads)
    torch.manual_seed(plan.settings.seed)
    gc.collect()
    release_free_heap()
    if process.device.type == "cuda":
        torch.cuda.empty_cache()


def serve(inbox: Path) -> None:
    """Time every cell the inbox hands over, in order, until told to stop; rank 0 writes each cell's figures."""
    die_with_parent()
    process: Process | None = None
    for number in range(sys.maxsize):
        command = next_command(inbox, number)
        if command.get("stop"):
            break
        plan = RunPlan.model_validate(command["plan"])
        if process is None:
            process = start(plan.machine)
            gc.freeze()  # what the imports and the process group made lives as long as the job: no collection scans it
            if process.is_main:
                (inbox / READY).write_text(repr(time.time()))
        reset_between_cells(plan, process)
        if dist.is_initialized():
            dist.barrier()
        data, initial_weights = data_and_initial_weights(plan)
        measure_cell(
            plan,
            process,
            data,
            initial_weights,
            command["warmup"],
            command["steps"],
            Path(command["out"]),
            command["count_kept"],
        )
    stop()


def main() -> None:
    """Entry point of a warm cell worker: each model's blocks are timed for its cut once, not once per cell."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inbox", type=Path)
    with remembered_block_times():
        serve(parser.parse_args().inbox)


if __name__ == "__main__":
    stage_main(main)
