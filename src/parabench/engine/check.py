"""The pipeline's head: params.yaml validated and every run planned, the machine and the data sources recorded.

Stage `check` runs this at every `dvc repro` and `dvc exp run`, before any other stage: DVC removes a stage's
outputs before running it, so a bad value caught here costs nothing the user had, and a key DVC does not watch
(a misspelt one beside the real one) stops a pipeline whose stages are all cached.
"""

import logging
from collections.abc import Iterable
from pathlib import Path

import torch

from parabench.config import DATASET_NAMES, Params, load_params
from parabench.data.fetch import mirror_root
from parabench.engine.cells import plan_benchmark, plan_sweep
from parabench.engine.check_memo import MEMO_FILE, remember
from parabench.engine.plan import make_plan
from parabench.errors import ConfigError
from parabench.io import write_json
from parabench.params_file import PARAMS_FILE
from parabench.paths import ENVIRONMENT_FILE, ROLES, source_record_file
from parabench.prediction.collectives import unknown_links
from parabench.runtime.cpu import cpu_model
from parabench.runtime.environment import machine_identity
from parabench.runtime.hardware import resolve
from parabench.strategies.options import Precision
from parabench.strategies.precision import DTYPES, probe_step_seconds

log = logging.getLogger("parabench.check")
SLOWER_THAN_32 = 1.25  # a mixed precision whose probe step takes longer than this times float32's is reported


def slow_precisions(precisions: Iterable[Precision]) -> list[str]:
    """Why each mixed precision among `precisions` will measure slow kernels on this CPU: its probe step took more
    than SLOWER_THAN_32 times float32's (float32 probed once for them all, and not at all where none is mixed)."""
    mixed = sorted(set(precisions) - {"32"})
    if not mixed:
        return []
    full = probe_step_seconds("32")
    reasons = []
    for precision in mixed:
        seconds = probe_step_seconds(precision)
        if seconds > SLOWER_THAN_32 * full:
            reasons.append(
                f"precision: {precision} on this CPU ({cpu_model()}, torch's {torch.backends.cpu.get_cpu_capability()} "
                f"kernels): a probe step (a convolution, BatchNorm and a linear layer, forward and backward) took "
                f"{seconds / full:.1f}x its float32 time ({seconds * 1e3:.1f} ms against {full * 1e3:.1f} ms): torch "
                f"has no fast {DTYPES[precision]} kernels for it here, so the steps at {precision} will measure that "
                f"and take about that much longer; the runs go on"
            )
    return reasons


def check_all(params: Params) -> list[str]:
    """Check the prediction's links by name (prediction.py holds them: the schema leaves them to this stage, so that
    no stage that trains depends on that table); plan every train and reference run, so that a bad value stops the
    first stage, not the fifth; plan every
    benchmark and sweep cell too, and return what each one that cannot run on this hardware will skip, and why
    (their stages record it and go on)."""
    problems = unknown_links(params.predict.interconnect, params.predict.network)
    if problems:
        raise ConfigError(f"{PARAMS_FILE}: " + "; ".join(problems))
    machine = resolve(params.hardware)
    runs = [
        make_plan(params, workload_name, role, machine=machine) for workload_name in params.inputs for role in ROLES
    ]
    raw, scale = params.model_dump(), params.timing_scale(machine.accelerator)
    planned = [
        (f"benchmark@{workload_name}", entry)
        for workload_name in params.inputs
        for entry in plan_benchmark(raw, workload_name, params.benchmark.strategies, machine.devices, scale)
    ]
    planned += [
        (f"sweep@{name}", entry) for name, sweep in params.sweeps.items() for _, entry in plan_sweep(raw, sweep, scale)
    ]
    if machine.accelerator == "cpu":
        for slow in slow_precisions(
            plan.setup.precision for plan in [*runs, *(entry.plan for _, entry in planned)] if plan
        ):
            log.warning(slow)
    return [f"{stage}: {entry.cell.label}: {entry.skipped_reason}" for stage, entry in planned if entry.plan is None]


class Findings(logging.Handler):
    """What the check logs at INFO and above, kept for its memo to repeat."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def check() -> None:
    """Validate and plan everything, then write the records the other stages depend on, and remember them."""
    findings = Findings()
    logging.getLogger("parabench").addHandler(findings)
    try:
        records = validate_and_record()
    finally:
        logging.getLogger("parabench").removeHandler(findings)
    if MEMO_FILE.parent.parent.is_dir():  # in a DVC project (.dvc/)
        remember(records, findings.records)


def validate_and_record() -> list[Path]:
    """Validate and plan everything; write the machine's identity and each dataset's source record; return their
    paths."""
    params = load_params()
    skipped = check_all(params)
    if skipped:
        log.info(
            "%d benchmark or sweep cell(s) cannot run on this hardware (the warnings above say why): their stages "
            "will record them as skipped and go on",
            len(skipped),
        )
    sources = {dataset: params.data_source(dataset) for dataset in DATASET_NAMES}
    if any(source.source == "download" for source in sources.values()):
        mirror_root()  # a mirror variable naming no folder stops here, not file by file in the download stages
    write_json(ENVIRONMENT_FILE, machine_identity())
    for dataset, source in sources.items():
        write_json(source_record_file(dataset), source.record())
    return [ENVIRONMENT_FILE, *(source_record_file(dataset) for dataset in sources)]
