"""The pipeline's head: params.yaml validated and every run planned, the machine and the data sources recorded.

Stage `check` runs this at every `dvc repro` and `dvc exp run`, before any other stage: DVC removes a stage's
outputs before running it, so a bad value caught here costs nothing the user had, and a key DVC does not watch
(a misspelt one beside the real one) stops a pipeline whose stages are all cached.
"""

import logging
from pathlib import Path

from parabench.config import DATASET_NAMES, PARAMS_FILE, Params, load_params
from parabench.data.fetch import mirror_root
from parabench.engine.cells import plan_benchmark, plan_sweep
from parabench.engine.check_memo import MEMO_FILE, remember
from parabench.engine.plan import make_plan
from parabench.errors import ConfigError
from parabench.io import write_json
from parabench.paths import ENVIRONMENT_FILE, ROLES, source_record_file
from parabench.prediction import unknown_links
from parabench.runtime.cpu import cpu_flags, cpu_model
from parabench.runtime.environment import machine_identity
from parabench.runtime.hardware import resolve

log = logging.getLogger("parabench.check")
NATIVE_FLAGS = {"bf16-mixed": ("avx512_bf16", "amx_bf16"), "16-mixed": ("avx512_fp16", "amx_fp16")}


def emulated_precision(precision: str, flags: list[str]) -> str | None:
    """Why a mixed precision on this CPU measures emulation (no instruction for its dtype among `flags`), or None."""
    native = NATIVE_FLAGS.get(precision)
    if native is None or any(flag in flags for flag in native):
        return None
    return (
        f"precision: {precision} on this CPU ({cpu_model()}) has none of {', '.join(native)}: torch emulates the "
        f"dtype, so the steps will measure that emulation, usually slower than 32 here; the runs go on"
    )


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
    emulated = emulated_precision(params.precision, cpu_flags()) if machine.accelerator == "cpu" else None
    if emulated:
        log.warning(emulated)
    for workload_name in params.inputs:
        for role in ROLES:
            make_plan(params, workload_name, role, machine=machine)
    raw = params.model_dump()
    planned = [
        (f"benchmark@{workload_name}", entry)
        for workload_name in params.inputs
        for entry in plan_benchmark(raw, workload_name, params.benchmark.strategies, machine.devices)
    ]
    planned += [
        (f"sweep@{name}", entry)
        for name, sweep in params.sweeps.items()
        for _, entry in plan_sweep(raw, sweep, params.scale)
    ]
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
