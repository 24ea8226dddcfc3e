"""A cell job's worker: one process (or one rank of a torchrun job) that keeps every cell of its process layout alive
and times them a turn at a time, as its inbox hands over the commands (engine/cell_channel.py).

    python -m parabench.engine.cell_worker INBOX

The launcher (engine/cell_jobs.py) sends, in order: `join` (the machine: join the process group), `setup` of each
cell (its plan: build, warm up, count off the clock), `turn` of a cell as often as it is timed, and `stop`. Every
rank receives every command, so all ranks take the same steps. Cells of the same workload and settings share the
data, opened once, and start from the same initial weights, drawn once.
"""

import argparse
import gc
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
from torch import Tensor

from parabench.cli import stage_main
from parabench.engine.cell_channel import WorkerEnd
from parabench.engine.plan import RunPlan
from parabench.engine.timed_cell import TimedCell
from parabench.records import Record
from parabench.runtime.hardware import Machine
from parabench.runtime.memory import devices_of, memory_now_mb, release_free_heap
from parabench.runtime.orphans import die_with_parent
from parabench.runtime.process import start, stop
from parabench.strategies.partition import remembered_block_times
from parabench.workloads import WorkloadData


class Opened:
    """The data and initial weights of the cells' workloads, each made once."""

    def __init__(self) -> None:
        self._made: dict[str, tuple[WorkloadData, dict[str, Tensor]]] = {}

    def of(self, plan: RunPlan) -> tuple[WorkloadData, dict[str, Tensor]]:
        """The plan's data and the plain model's initial weights (seeded, built and initialised by the workload)."""
        key = plan.model_dump_json(include={"workload_name", "dataset", "scale", "settings"})
        if key not in self._made:
            torch.manual_seed(plan.settings.seed)
            model = plan.workload.build_model(plan.settings)
            plan.workload.initialize(model, plan.settings)
            self._made[key] = plan.open_data(), model.state_dict()
        return self._made[key]


def serve(inbox: Path) -> None:
    """Answer the launcher's commands until `stop`; rank 0 answers each."""
    die_with_parent()
    channel = WorkerEnd(inbox, int(os.environ.get("LOCAL_RANK", "0")))
    machine = Machine.model_validate(channel.next_command()["machine"])
    process = start(machine)
    gc.freeze()  # what the imports and the process group made lives as long as the job: never scanned
    if dist.is_initialized():
        dist.barrier()  # every rank ready: the launcher pauses the job once rank 0 answers
    if process.is_main:
        channel.answer({"ready_at": time.time()})
    cells: dict[str, TimedCell] = {}
    opened = Opened()
    base_mb: dict[str, float] | None = None  # what the process holds before any cell: torch, the group, the data
    while not (command := channel.next_command()).get("stop"):
        if "plan" in command:
            plan = RunPlan.model_validate(command["plan"])
            torch.set_num_threads(plan.threads)
            data, initial_weights = opened.of(plan)
            if base_mb is None:
                release_free_heap()
                base_mb = memory_now_mb(devices_of(process.device))
            cell = TimedCell(plan, process, data, initial_weights, command["warmup"], base_mb)
            cells[command["cell"]] = cell
            answer: Record | None = cell.setup
        else:
            answer = cells[command["cell"]].turn(command["steps"])
        if answer is not None:
            channel.answer(answer.model_dump(mode="json"))
    stop()


def main() -> None:
    """Entry point of a cell job's worker: each model's blocks are timed for its cut once, not once per cell."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inbox", type=Path)
    with remembered_block_times():
        serve(parser.parse_args().inbox)


if __name__ == "__main__":
    stage_main(main)
