"""The typed records: what a worker writes reads back as written, anything else is refused, and docs/metrics.md
lists every field with the meaning the record gives it."""

from pathlib import Path

import pytest
from pydantic import ValidationError

from parabench.engine.cells import StageTime
from parabench.records import BenchmarkResults, CellRun, RunRecord, reference
from parabench.report.benchmark import summarize_cells
from tests.setups import run_record
from tests.test_benchmark_report import entries

METRICS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "metrics.md"


def test_a_run_record_reads_back_as_written():
    record = run_record("ddp", [0.2, 0.1, 0.3], devices=2)
    assert RunRecord.model_validate_json(record.model_dump_json()) == record
    assert record.step_time_s.median == 0.2 and record.units_per_s == pytest.approx(500)


def test_a_record_refuses_a_missing_or_unknown_field():
    written = run_record("single", [0.1]).model_dump()
    with pytest.raises(ValidationError, match="units_per_s"):
        RunRecord.model_validate({key: value for key, value in written.items() if key != "units_per_s"})
    with pytest.raises(ValidationError, match="samples_per_s"):
        RunRecord.model_validate({**written, "samples_per_s": 10.0})
    with pytest.raises(ValidationError, match="step_durations"):
        CellRun.model_validate({"unit": "sample"})


def test_the_metrics_page_lists_every_field_as_the_records_describe_it():
    assert reference() in METRICS_PAGE.read_text(), (
        "docs/metrics.md's last section differs from the records: paste `python -m parabench.records` there"
    )


def test_a_benchmark_summary_holds_its_schema_and_refuses_a_misspelt_or_unknown_figure():
    """What the speedup stage writes to results/benchmark/<workload>.json (report/benchmark.write_benchmark)."""
    stage = StageTime(wall_s=1.0).shares().model_dump()
    summary = {**summarize_cells(entries()).model_dump(mode="json"), "stage": stage, "choices": {}}
    results = BenchmarkResults.model_validate(summary)
    assert results.cells["dp"].status == "skipped" and results.cells["ddp"].status == "ran"
    ddp = summary["cells"]["ddp"]
    for wrong, named in (
        ({"speedup_verdict": "quicker"}, "speedup_verdict"),
        ({"samples_per_s": 1.0}, "samples_per_s"),
    ):
        with pytest.raises(ValidationError, match=named):
            BenchmarkResults.model_validate({**summary, "cells": {**summary["cells"], "ddp": {**ddp, **wrong}}})
