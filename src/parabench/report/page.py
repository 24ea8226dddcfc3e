"""The answer on one page: report/index.html, one section per seed experiment, everything embedded (no request).

Each section asks its seed's question, answers it in sentences computed from this machine's numbers, then shows
the evidence: the benchmark (rates with their intervals, speedups paired by turn, the ceiling, where each step goes,
peak memory, disturbed steps, skipped strategies and why), the training run against its reference per epoch with its
quality and 95% interval, the sweeps of the workload, and where its data came from. The header names the machine
and the commit; every figure names the machine too.
"""

import base64
import datetime
import html
import io
import subprocess
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

from parabench.io import read_json, read_model, write_atomic
from parabench.paths import (
    ENVIRONMENT_FILE,
    PROBE_FILE,
    PROBE_NETWORK_FILE,
    ROLES,
    benchmark_figure_file,
    results_file,
    sweep_figure_file,
    train_curve_file,
)
from parabench.records import (
    BenchmarkResults,
    CellFigures,
    Comparison,
    Evaluation,
    PredictionResults,
    Probed,
    RunRecord,
    SweepResults,
    probe_record,
    ran,
)
from parabench.report.answers import answer, noise_sentence, speedup_text
from parabench.report.benchmark import largest_rank_memory, paired_rate, skipped
from parabench.report.epoch_figure import epoch_figure
from parabench.report.prediction_rows import check_row, order_row, probe_rows
from parabench.report.time_split import PART_MEANINGS
from parabench.runtime.environment import machine_line
from parabench.strategies.registry import BASELINE
from parabench.workloads import WORKLOADS

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1180px; margin: 2em auto; padding: 0 1em; color: #222; }
header { border-bottom: 2px solid #4c72b0; margin-bottom: 1em; }
h2 { margin-top: 2.5em; border-bottom: 1px solid #ccc; }
.question { font-style: italic; }
.source { font-style: normal; color: #666; font-size: 0.9em; }
.answer { background: #eef3fb; padding: 0.8em 1em; border-left: 4px solid #4c72b0; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: right; }
th:first-child, td:first-child { text-align: left; }
img { max-width: 100%; display: block; margin: 0.8em 0; }
.note { color: #555; font-size: 0.9em; }
.warn { color: #a33; }
"""
# After loading, the page counts its figures and those the browser could not show, says so if any, and records both on
# <body> (data-figures, data-broken-figures) for a browser test to read.
FIGURE_CHECK = """
window.addEventListener("load", () => {
  const broken = [...document.images].filter((image) => !image.complete || image.naturalWidth === 0);
  document.body.dataset.figures = document.images.length;
  document.body.dataset.brokenFigures = broken.length;
  if (broken.length) {
    const warning = document.createElement("p");
    warning.className = "warn";
    warning.textContent = `${broken.length} of ${document.images.length} figures could not be shown.`;
    document.body.prepend(warning);
  }
});
"""


def figure_tag(png: bytes, alt: str) -> str:
    """An <img> holding the PNG itself, so the page needs no other file."""
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def rendered(figure: Figure) -> bytes:
    """A matplotlib figure as PNG bytes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    plt.close(figure)
    return buffer.getvalue()


def commit() -> str:
    """The project's commit (with `+ uncommitted changes` when a tracked file other than dvc.lock, which every
    `dvc repro` rewrites, differs from it), or why it is unknown."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True)
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!dvc.lock"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git work tree)"
    return head.stdout.strip() + (" + uncommitted changes" if status.stdout.strip() else "")


def table_html(rows: list[dict[str, Any]]) -> str:
    """Rows as an HTML table, every value escaped."""
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in rows[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(value))}</td>" for value in row.values()) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def sweep_rows(results: SweepResults) -> list[dict[str, Any]]:
    """Each cell of a sweep that ran: its curve and value, its median step and its largest rank's peak memory (speed
    and memory side by side: what a knob such as precision buys)."""
    rows = []
    for cell in results.cells:
        if not isinstance(cell.figures, CellFigures):
            continue
        peak_memory, kept = largest_rank_memory(cell.figures)
        rows.append(
            {
                "curve": cell.curve,
                results.sweep["param"]: "" if cell.value is None else cell.value,
                "median step": f"{cell.figures.step_time_s.median * 1000:.4g} ms",
                "peak memory": f"{peak_memory:.0f} MB",
                "kept for backward": "" if kept is None else f"{kept:.3g} MiB",
            }
        )
    return rows


def split_text(cell: CellFigures) -> str:
    """A cell's time split as shares of its median step: `compute 71% · communication 18% · ...`."""
    step = cell.step_time_s.median
    return " · ".join(f"{part} {seconds / step:.0%}" for part, seconds in cell.time_split_s.items())


def benchmark_rows(benchmark: BenchmarkResults) -> list[dict[str, Any]]:
    """One row per cell that ran: rate, speedup with its interval and verdict, efficiency, step, split, memory, load,
    and why its figure is not an answer where a check flagged it. The rate is the one the speedup gives (single's
    median rate times it), so that the two columns are one estimate; the median step is the cell's own."""
    rows = []
    reference = ran(benchmark.cells, BASELINE)
    for label, cell in benchmark.cells.items():
        if not isinstance(cell, CellFigures):
            continue
        efficiency = cell.efficiency_vs_ceiling
        rows.append(
            {
                "cell": label,
                f"{cell.unit}s/s (single's x the speedup)": f"{paired_rate(cell, reference):.3g}",
                "speedup vs single, paired by turn (95%)": speedup_text(cell) if cell.speedup is not None else "-",
                "verdict": cell.speedup_verdict or "-",
                "of the ceiling": f"{efficiency:.0%}" if efficiency is not None else "-",
                "turns": cell.turns,
                "median step (s)": f"{cell.step_time_s.median:.4g}",
                "where the step goes": split_text(cell),
                "split adds up (within 5%)": "yes"
                if cell.time_split_adds_up
                else f"no ({cell.time_split_vs_step:+.0%})",
                f"peak memory, MB ({cell.memory_kind})": ", ".join(
                    f"{rank} {mb:.0f}" for rank, mb in cell.peak_memory_mb.items()
                ),
                "disturbed steps left out": disturbed_text(cell.disturbed_steps),
                "check": f"FLAGGED: {benchmark.flags[label]}" if label in benchmark.flags else "passed",
            }
        )
    return rows


def skipped_html(benchmark: BenchmarkResults) -> str:
    """Each strategy that could not run here, with the reason it gave before any work."""
    reasons = skipped(benchmark.cells)
    if not reasons:
        return ""
    items = "".join(f"<li><b>{html.escape(label)}</b>: {html.escape(reason)}</li>" for label, reason in reasons)
    return f"<p>Skipped on this machine:</p><ul>{items}</ul>"


def stage_html(benchmark: BenchmarkResults) -> str:
    """The A/A control, and where the benchmark stage's time went."""
    stage = benchmark.stage
    return (
        f'<p class="note">{html.escape(noise_sentence(benchmark.noise))} The stage took {stage.wall_s:.0f} s: '
        f"{stage.start_up_share:.0%} starting workers ({stage.jobs_started} jobs), {stage.setup_share:.0%} setting "
        f"the cells up, {stage.timed_steps_share:.0%} in timed steps ({stage.turns} turns).</p>"
    )


def disturbed_text(disturbed: dict[str, int]) -> str:
    """A cell's disturbed steps, left out, by why (`none` when none was)."""
    return ", ".join(f"{count} ({why})" for why, count in disturbed.items()) or "none"


def quality_rows(evaluation: Evaluation) -> list[dict[str, Any]]:
    """Each score of the run and its reference with its 95% interval, and the paired difference."""
    rows = []
    scores = {"train": evaluation.train, "reference": evaluation.reference}
    for metric, value in evaluation.train.items():
        if metric.endswith("_ci95") or not isinstance(value, float):
            continue
        row = {"score": metric}
        for role, role_scores in scores.items():
            interval = role_scores.get(f"{metric}_ci95")
            row[role] = f"{role_scores[metric]:.3f}" + (f" ± {interval:.3f}" if interval is not None else "")
        rows.append(row)
    paired = evaluation.paired
    if paired:
        rows.append(
            {
                "score": "difference (run - reference), paired on the same items",
                "train": f"{paired.delta:+.3f} (95%: {paired.ci95_low:+.3f} to {paired.ci95_high:+.3f})",
                "reference": "",
            }
        )
    return rows


def probe_html() -> str:
    """The collective probe (results/probe.json, and results/probe_network.json between the nodes): each collective's
    fitted latency and bandwidth and its bus bandwidth at the largest message; nothing where the probe stage has not
    run, and nothing between the nodes on one node."""
    if not PROBE_FILE.exists():
        return ""
    probe = probe_record(read_json(PROBE_FILE))
    if not isinstance(probe, Probed):
        parts = [f'<p class="note">Collective probe: {html.escape(probe.skipped)}.</p>']
    else:
        parts = [
            f'<h2>The links measured here</h2><p class="note">The collectives over {probe.ranks} '
            f"{html.escape(probe.backend)} ranks on {html.escape(probe.device)}, a latency and bandwidth fitted to "
            "each (alpha-beta); CPU busy: the share of a call its rank keeps a CPU busy (where ranks share one CPU, "
            "only the rest can overlap a backward pass); busbw as nccl-tests defines it. The predictions below start "
            "from these.</p>",
            table_html(probe_rows(probe)),
        ]
    network = probe_record(read_json(PROBE_NETWORK_FILE)) if PROBE_NETWORK_FILE.exists() else None
    if isinstance(network, Probed):
        parts += [
            f'<h3>Between the nodes</h3><p class="note">The same collectives over {network.ranks} nodes, one '
            f"{html.escape(network.backend)} rank on each: every message crosses the network (predict.network: "
            "measured takes these beyond a node).</p>",
            table_html(probe_rows(network)),
        ]
    return "".join(parts)


SCALING_WORDS = {
    "strong": "single's global batch shared by the devices (strong scaling)",
    "weak": "each device a batch as large as single's, so the global batch grows with them (weak scaling)",
}


def prediction_html(workload: str) -> str:
    """What more devices would buy (results/prediction/): predicted against measured at each multi-device cell,
    then each strategy's predicted speedup (efficiency) per device count, marked unvalidated off this machine, and
    what limits ddp at the largest count; nothing where the predict stage has not run."""
    path = results_file("prediction", workload)
    if not path.exists():
        return ""
    prediction = read_model(path, PredictionResults)
    checks = [check_row(check) for check in prediction.checks]
    grid: dict[str, dict[str, str]] = {}
    for row in prediction.predictions:
        mark = "" if row.validated else " *"
        grid.setdefault(row.strategy, {"strategy": row.strategy})[f"{row.devices} devices"] = (
            f"{row.speedup:.2f}x ({row.efficiency:.0%}){mark}"
        )
    neck = prediction.bottleneck
    parts = [
        "<h3>What more devices would buy here (PREDICTED)</h3>",
        '<p class="note">Predicted against measured at each multi-device cell of the benchmark (one replica\'s '
        "compute from the ceiling, the communication from the probe's link; a cut model's stages timed one by one; "
        "docs/prediction.md):</p>",
        table_html(checks) or '<p class="note">No multi-device cell to check here.</p>',
        '<p class="note">Where two checked cells\' rates differ beyond the noise floor, does the prediction order '
        "them alike (the faster's rate over the slower's, measured with its 95% interval, and predicted)?</p>",
        table_html([order_row(order) for order in prediction.order_checks])
        or '<p class="note">No two checked cells differ beyond the noise here.</p>',
        '<p class="note">Each strategy\'s predicted speedup over single (efficiency) on devices of their own, '
        f"{SCALING_WORDS.get(prediction.scaling, prediction.scaling)}; * unvalidated: another link kind, or devices "
        "unlike this machine's.</p>",
        table_html(list(grid.values())),
    ]
    if neck:
        others = ", ".join(f"{name} {share:.0%}" for name, share in neck.other_links.items())
        parts.append(
            f"<p>At {neck.devices} devices ({html.escape(neck.link)}), exposed all-reduce is "
            f"{neck.exposed_share:.0%} of ddp's step; other links would leave: {html.escape(others)}.</p>"
        )
    return "\n".join(parts)


def section(workload: str, every_sweep: dict[str, SweepResults], machine: str) -> str:
    """One seed experiment: question, answer, then the evidence from the pipeline's files (the sweeps among
    `every_sweep`, name -> results, that sweep this workload included)."""
    question = WORKLOADS[workload].question
    benchmark = read_model(results_file("benchmark", workload), BenchmarkResults)
    comparison = read_model(results_file("speedup", workload), Comparison)
    sweeps = {name: sweep for name, sweep in every_sweep.items() if sweep.sweep["workload"] == workload}
    runs = {role: read_model(results_file(role, workload), RunRecord) for role in ROLES}
    trained = ", ".join(filter(None, [runs["train"].strategy, runs["train"].knobs()]))
    parts = [
        f'<section id="{workload}"><h2>{html.escape(workload)}: {html.escape(question.title)}</h2>',
        f'<p class="question">{html.escape(question.question)} <span class="source">(the question of seed '
        f"experiment {question.seed}: docs/workloads.md)</span></p>",
        f'<p class="answer">{html.escape(answer(workload, question, benchmark, comparison.quality, sweeps))}</p>',
        "<h3>Every strategy, the cells taking turns step by step</h3>",
        figure_tag(benchmark_figure_file(workload).read_bytes(), f"{workload} benchmark"),
        table_html(benchmark_rows(benchmark)),
        stage_html(benchmark),
        skipped_html(benchmark),
        "<h3>The training run against its reference</h3>",
        f"<p>{html.escape(trained)} against {html.escape(runs['reference'].strategy)}.</p>",
        figure_tag(
            rendered(
                epoch_figure(
                    workload,
                    {f"{role}: {runs[role].strategy}": pd.read_csv(train_curve_file(role, workload)) for role in ROLES},
                    machine,
                )
            ),
            f"{workload} per-epoch curves",
        ),
    ]
    if comparison.quality:
        parts += [table_html(quality_rows(comparison.evaluation)), f"<p>{html.escape(comparison.quality)}</p>"]
    else:
        parts.append('<p class="note">No quality to compare: the data are synthetic (time only).</p>')
    if any(runs[role].contended for role in ROLES):
        parts.append(
            '<p class="warn">CONTENDED: other programs took over 10% of the CPU while a run was timed; '
            "trust the benchmark's interleaved figures over the two runs'.</p>"
        )
    for name in sweeps:
        parts += [
            f"<h3>Sweep {html.escape(name)}</h3>",
            figure_tag(sweep_figure_file(name).read_bytes(), name),
            table_html(sweep_rows(sweeps[name])),
        ]
    parts.append(prediction_html(workload))
    parts += ["<h3>Data</h3>", f"<p>{html.escape(comparison.data_origin)}</p>", "</section>"]
    return "\n".join(part for part in parts if part)


def page(workloads: list[str], sweep_names: list[str]) -> str:
    """The whole page: header (machine, commit, time), the parts' meanings, one section per workload."""
    environment = read_json(ENVIRONMENT_FILE)
    every_sweep = {name: read_model(results_file("sweep", name), SweepResults) for name in sweep_names}
    machine = machine_line(environment)
    generated = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    meanings = "".join(f"<li><b>{part}</b>: {html.escape(meaning)}</li>" for part, meaning in PART_MEANINGS.items())
    navigation = " · ".join(f'<a href="#{name}">{html.escape(name)}</a>' for name in workloads)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            "<title>parabench: what each parallel strategy buys on this machine</title>",
            f"<style>{STYLE}</style><script>{FIGURE_CHECK}</script></head><body>",
            "<header><h1>parabench: what each parallel strategy buys on this machine</h1>",
            f"<p>Measured on <b>{html.escape(machine)}</b>; commit {html.escape(commit())}; page written {generated}."
            f"</p><p>{navigation}</p></header>",
            '<p class="note">Where a step goes, part by part (the benchmark figures\' right panel):</p>',
            f'<ul class="note">{meanings}</ul>',
            probe_html(),
            *(section(name, every_sweep, machine) for name in workloads),
            "</body></html>",
        ]
    )


def write_page(path: Path, workloads: list[str], sweep_names: list[str]) -> None:
    """Write the page for `workloads` and the sweeps `sweep_names` to `path`, atomically."""
    text = page(workloads, sweep_names)
    write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
