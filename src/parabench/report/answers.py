"""What each seed experiment asked, and this machine's answer in a few sentences computed from its numbers."""

from dataclasses import dataclass
from typing import Any

from parabench.engine.cells import CEILING

REFERENCE = "single"


@dataclass(frozen=True)
class SeedQuestion:
    """A seed document's experiment in its own terms: which seed, its title, the question it asked."""

    seed: str
    title: str
    question: str


QUESTIONS = {
    "fashion_mnist": SeedQuestion(
        "003", "d2l's concise multi-GPU training: ResNet-18 on Fashion-MNIST",
        "How much faster does ResNet-18 train on Fashion-MNIST when each device holds a replica and the gradients are "
        "averaged, and what do the strategies lose to communication?"),
    "miniimagenet": SeedQuestion(
        "000", "A Relation Network on miniImageNet: DataParallel against DistributedDataParallel",
        "Is DistributedDataParallel faster than DataParallel for a few-shot Relation Network, and does either "
        "change what the model learns?"),
    "hotdog": SeedQuestion(
        "002", "d2l's hand-written all-reduce, and fine-tuning ResNet-18 on hotdog",
        "Does gradient averaging written by hand keep up with the library's, and does fine-tuning reach the same "
        "accuracy under every strategy?"),
    "resnet50": SeedQuestion(
        "001", "ResNet-50 cut across devices: model parallelism and pipelining",
        "What does model parallelism cost, what does pipelining win back, and which split size is best?"),
}


def ran(benchmark: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The benchmark's cells that ran, the ceiling left out (it is a bound, not a strategy)."""
    return {label: cell for label, cell in benchmark.items() if cell["status"] == "ran" and label != CEILING}


def speedup_range(cell: dict[str, Any], reference: dict[str, Any]) -> str:
    """A cell's speedup over the reference with its spread: over the rounds where there were several
    (`1.55x (1.49x-1.60x over 2 rounds)`), else over its own steps' quartiles (`1.55x (1.49x-1.60x, steps'
    p75-p25)`)."""
    speedup = cell["rate"] / reference["rate"]
    if cell["rounds"] > 1:
        low, high = (cell[key] / reference["rate"] for key in ("rate_slowest_round", "rate_fastest_round"))
        return f"{speedup:.2f}x ({low:.2f}x-{high:.2f}x over {cell['rounds']} rounds)"
    steps = cell["step_time_s"]
    low, high = (speedup * steps["median"] / steps[key] for key in ("p75", "p25"))
    return f"{speedup:.2f}x ({low:.2f}x-{high:.2f}x, steps' p75-p25)"


def fastest_sentence(workload: str, benchmark: dict[str, dict[str, Any]]) -> str:
    """Which strategy trains fastest here, against single, with its spread; how close data parallelism comes to the
    ceiling; and what communication costs its fastest data-parallel strategy."""
    cells = ran(benchmark)
    reference = cells.get(REFERENCE)
    if reference is None:
        return f"No {workload} benchmark cell of `single` ran here, so no speedup can be given."
    best_label = max(cells, key=lambda label: cells[label]["rate"])
    best = cells[best_label]
    if best_label == REFERENCE:
        others = {label: cell for label, cell in cells.items() if label != REFERENCE}
        sentences = [f"No strategy beats single here ({reference['rate']:.3g} {reference['unit']}s/s)."]
        if others:
            closest = max(others, key=lambda label: others[label]["rate"])
            sentences.append(f"The closest is {closest}, at {speedup_range(others[closest], reference)} single.")
    else:
        sentences = [f"The fastest strategy here is {best_label}: {best['rate']:.3g} {best['unit']}s/s, "
                     f"{speedup_range(best, reference)} single."]
    parallel = {label: cell for label, cell in cells.items() if cell.get("efficiency_vs_ceiling") is not None}
    if parallel:
        label = max(parallel, key=lambda name: parallel[name]["rate"])
        cell = parallel[label]
        sentence = f"{label} reaches {cell['efficiency_vs_ceiling']:.0%} of what independent copies manage side by side"
        if cell.get("communication_share") is not None:
            sentence += f"; communication not hidden behind compute takes {cell['communication_share']:.0%} of its step"
        sentences.append(sentence + ".")
    return " ".join(sentences)


def pair_sentence(benchmark: dict[str, dict[str, Any]], first: str, second: str) -> str:
    """How `first` compares with `second` in the benchmark, or why it cannot be compared here."""
    cells = benchmark
    for label in (first, second):
        cell = cells.get(label, {"status": "missing", "reason": "not in benchmark.strategies"})
        if cell["status"] != "ran":
            reason = (cell.get("reason") or "no reason recorded").splitlines()[0].rstrip(".")
            return f"{first} against {second}: {label} did not run here ({reason})."
    ratio = cells[first]["rate"] / cells[second]["rate"]
    return f"{first} trains at {ratio:.2f}x the rate of {second}."


def quality_sentence(comparison: dict[str, Any] | None) -> str:
    """The training run's quality against its reference's, in words, from the speedup stage."""
    if comparison is None or not comparison.get("quality"):
        return ""
    words = comparison["quality"].rstrip(".")
    return words[0].upper() + words[1:] + "."


def sweep_sentence(name: str, sweep: dict[str, Any]) -> str:
    """Each curve's best value in the sweep `name`, against single and model_parallel."""
    parts = []
    for curve, figures in sweep["curves"].items():
        against = [f"{figures['speedup']:.2f}x single"] if figures.get("speedup") else []
        if figures.get("speedup_vs_model_parallel"):
            against.append(f"{figures['speedup_vs_model_parallel']:.2f}x model_parallel")
        parts.append(f"{curve} is fastest at {sweep['sweep']['param']}={figures['best_value']}"
                     + (f" ({', '.join(against)})" if against else ""))
    return (f"Sweep {name}: " + "; ".join(parts) + ".") if parts else ""


def answer(workload: str, benchmark: dict[str, dict[str, Any]], comparison: dict[str, Any] | None,
           sweeps: dict[str, dict[str, Any]]) -> str:
    """This machine's answer to the workload's seed question, from the benchmark, the run's comparison with its
    reference (quality) and the sweeps of the workload (by name)."""
    sentences = [fastest_sentence(workload, benchmark)]
    if workload == "miniimagenet":
        sentences.append(pair_sentence(benchmark, "ddp", "dp"))
    if workload == "hotdog":
        sentences.append(pair_sentence(benchmark, "allreduce", "ddp"))
    if workload == "resnet50":
        sentences.append(pair_sentence(benchmark, "model_parallel", REFERENCE))
        sentences += [sweep_sentence(name, sweep) for name, sweep in sweeps.items()]
    sentences.append(quality_sentence(comparison))
    return " ".join(sentence for sentence in sentences if sentence)
