"""What each seed experiment asked, and this machine's answer in a few sentences computed from its numbers."""

from parabench.records import (
    CellFigures,
    CellsSummary,
    CurveFigures,
    NoiseFloor,
    SkippedCell,
    SkippedCurve,
    SweepResults,
    ran,
)
from parabench.report.benchmark import paired_rate
from parabench.stats import rate_ratio, ratio_verdict
from parabench.strategies.registry import BASELINE
from parabench.workloads.contract import Question


def speedup_text(cell: CellFigures) -> str:
    """A cell's speedup over single with its 95% interval: `1.55x (1.49x-1.60x)`."""
    if cell.speedup is None or cell.speedup_ci95 is None:
        return "not compared (single did not run)"
    low, high = cell.speedup_ci95
    return f"{cell.speedup:.2f}x ({low:.2f}x-{high:.2f}x)"


def noise_sentence(noise: NoiseFloor) -> str:
    """The A/A control in words: how far two timings of the very same run landed apart, and what that makes noise
    (at least params.yaml's smallest_difference)."""
    least = noise.smallest_difference
    if noise.aa_floor is None or noise.aa_ci95 is None:
        why = f"No A/A control ran here: {noise.why_none or 'no control'}."
        return why + (f" A difference within {least:.1%} (smallest_difference) is not named." if least else "")
    low, high = noise.aa_ci95
    per_step = (high - low) / 2 / (noise.aa_ratio or 1.0)
    beyond = "beyond" if not low <= 1 <= high else "within"
    measured = (
        f"Timed twice as two cells in two processes, single against itself came out at {noise.aa_ratio:.3f}x "
        f"(95%: {low:.3f}-{high:.3f}): the per-step part (what the steps leave unknown) is +-{per_step:.1%}, the "
        f"per-process part (two processes running the same) {noise.aa_floor:.1%}, {beyond} it"
    )
    if noise.aa_floor >= least:
        within = f": a difference within {noise.floor:.1%} is this machine's noise."
    else:
        within = (
            f", within {noise.aa_floor:.1%}; a difference within {least:.1%} (smallest_difference: two runs minutes "
            "apart differ by more than one run's control sees) is not named."
        )
    return (
        measured + within + " The floor is this run's own: a shared machine can drift between runs, so compare two "
        "runs by their verdicts and intervals, not their last digits."
    )


def fastest_sentence(workload: str, benchmark: CellsSummary) -> str:
    """Which strategy trains fastest here, named only beyond the noise (else the tie), against single with its
    interval; how close data parallelism comes to the ceiling; the cells whose figures are not an answer, and why."""
    ranking, flags = benchmark.ranking, benchmark.flags
    ran_cells = {label: cell for label, cell in benchmark.cells.items() if isinstance(cell, CellFigures)}
    reference = ran(benchmark.cells, BASELINE)
    if reference is None:
        return f"No {workload} benchmark cell of `single` ran here, so no speedup can be given."
    runner_up = ranking.runner_up
    if ranking.fastest == BASELINE:
        sentences = [f"No strategy beats single here ({reference.rate:.3g} {reference.unit}s/s)."]
        if runner_up:
            sentences.append(f"The closest is {runner_up}, at {speedup_text(ran_cells[runner_up])} single.")
    elif ranking.fastest:
        fastest = ran_cells[ranking.fastest]
        ahead = ""
        if runner_up and ranking.margin_ci95:
            low, high = ranking.margin_ci95
            ahead = f", ahead of {runner_up} by {ranking.margin:.2f}x ({low:.2f}x-{high:.2f}x)"
        sentences = [
            f"The fastest strategy here is {ranking.fastest}: {paired_rate(fastest, reference):.3g} {fastest.unit}s/s, "
            f"{speedup_text(fastest)} single{ahead}."
        ]
    else:
        tied = ranking.tied
        sentences = [
            f"No strategy is fastest beyond the noise: {', '.join(tied)} are within it of each other "
            f"({', '.join(f'{label} {speedup_text(ran_cells[label])}' for label in tied if label != BASELINE)}"
            f"{' single' if any(label != BASELINE for label in tied) else ''})."
        ]
        if BASELINE in tied:
            sentences.append("So none of them beats single beyond the noise.")
    sentences.append(noise_sentence(benchmark.noise))
    parallel = [
        (label, cell)
        for label, cell in ran_cells.items()
        if cell.efficiency_vs_ceiling is not None and label not in flags
    ]
    if parallel:
        sentences.append(ceiling_sentence(*max(parallel, key=lambda pair: paired_rate(pair[1], reference))))
    sentences += [f"Not an answer: {label}, {why}." for label, why in flags.items()]
    return " ".join(sentences)


def ceiling_sentence(label: str, cell: CellFigures) -> str:
    """How close a data-parallel cell comes to its ceiling, and what its unhidden communication takes."""
    if cell.efficiency_vs_ceiling is None or cell.efficiency_vs_ceiling_ci95 is None:
        return ""
    low, high = cell.efficiency_vs_ceiling_ci95
    sentence = (
        f"{label} reaches {cell.efficiency_vs_ceiling:.0%} ({low:.0%}-{high:.0%}) of what independent copies manage "
        "side by side"
    )
    if cell.communication_share is not None:
        sentence += f"; communication not hidden behind compute takes {cell.communication_share:.0%} of its step"
    return sentence + "."


def pair_sentence(benchmark: CellsSummary, first: str, second: str) -> str:
    """How `first` compares with `second` in the benchmark, with its interval and verdict, or why it cannot be
    compared here."""
    pair = []
    for label in (first, second):
        cell = benchmark.cells.get(label, SkippedCell(status="skipped", reason="not in benchmark.strategies"))
        if isinstance(cell, SkippedCell):
            reason = cell.reason.splitlines()[0].rstrip(".") if cell.reason else "no reason recorded"
            return f"{first} against {second}: {label} did not run here ({reason})."
        pair.append(cell)
    point, low, high = rate_ratio(*pair)
    verdict = ratio_verdict((point, low, high), benchmark.noise.floor)
    words = {"faster": "faster than", "slower": "slower than"}.get(verdict, "no different, beyond the noise, from")
    return f"{first} trains at {point:.2f}x ({low:.2f}x-{high:.2f}x) the rate of {second}: {words} {second}."


def quality_sentence(quality: str | None) -> str:
    """The training run's quality against its reference's, in words (the speedup stage's), as a sentence."""
    if not quality:
        return ""
    words = quality.rstrip(".")
    return words[0].upper() + words[1:] + "."


def sweep_sentence(name: str, param: str, curves: dict[str, CurveFigures | SkippedCurve]) -> str:
    """Each curve's best value in the sweep `name` of `param`, against single and model_parallel (or that none ran)."""
    parts = []
    for curve, figures in curves.items():
        if not isinstance(figures, CurveFigures):
            parts.append(f"{curve} ran no value on this hardware (its cells were skipped: results/sweep/ says why)")
            continue
        against = [f"{figures.speedup:.2f}x single"] if figures.speedup else []
        if figures.speedup_vs_model_parallel:
            against.append(f"{figures.speedup_vs_model_parallel:.2f}x model_parallel")
        parts.append(
            f"{curve} is fastest at {param}={figures.best_value}" + (f" ({', '.join(against)})" if against else "")
        )
    return (f"Sweep {name}: " + "; ".join(parts) + ".") if parts else ""


def answer(
    workload: str,
    question: Question,
    benchmark: CellsSummary,
    quality: str | None,
    sweeps: dict[str, SweepResults],
) -> str:
    """This machine's answer to the workload's question, from the benchmark (the fastest, and each pair the question
    compares), the sweeps of the workload (by name) and the run's comparison with its reference (quality)."""
    sentences = [fastest_sentence(workload, benchmark)]
    sentences += [pair_sentence(benchmark, first, second) for first, second in question.compared]
    sentences += [sweep_sentence(name, sweep.sweep["param"], sweep.curves) for name, sweep in sweeps.items()]
    sentences.append(quality_sentence(quality))
    return " ".join(sentence for sentence in sentences if sentence)
