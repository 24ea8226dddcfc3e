"""Figures people can read: no two pieces of text (titles, tick labels, bar notes, legend entries, notes) overlap."""

from itertools import combinations

import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from parabench.engine.cells import Cell, CellRuns
from parabench.records import SkippedCell, StepTimes
from parabench.report.benchmark import skipped, summarize_cells, table
from parabench.report.benchmark_figure import benchmark_figure
from parabench.report.epoch_figure import epoch_figure
from parabench.report.sweep_figure import sweep_figure
from tests.test_benchmark_report import entries


def overlapping_texts(figure: Figure) -> list[tuple[str, str]]:
    """Pairs of visible, non-empty texts of the rendered figure whose boxes intersect."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    undrawn = {
        id(label)
        for axes in figure.axes
        for axis in (axes.xaxis, axes.yaxis)
        for tick in axis.get_major_ticks()
        if not min(axis.get_view_interval()) <= tick.get_loc() <= max(axis.get_view_interval())
        for label in (tick.label1, tick.label2)
    }  # a tick outside the view is not drawn
    texts = [
        text
        for text in figure.findobj(Text)
        if text.get_visible() and text.get_text().strip() and id(text) not in undrawn
    ]
    boxes = [(text.get_text(), text.get_window_extent(renderer)) for text in texts]
    return [(first, second) for (first, a), (second, b) in combinations(boxes, 2) if a.overlaps(b)]


def test_the_benchmark_figure_s_texts_do_not_overlap():
    """Every strategy of the default benchmark and the ceiling: seven cells side by side (the old chart's notes
    collided with their neighbours' at seven)."""
    cells = entries()
    cells[3] = CellRuns(
        Cell("fashion_mnist", "dp"),
        None,
        skipped_reason=(
            "strategy 'dp' (torch.nn.DataParallel) needs CUDA GPUs and this run is on the CPU (hardware.accelerator); "
            "use strategy ddp for data parallelism on the CPU."
        ),
    )  # the real reason, as long as it is
    more = [
        CellRuns(Cell("fashion_mnist", name), cells[1].plan, run=cells[1].run)
        for name in ("allreduce", "fsdp", "pipeline")
    ]
    results = summarize_cells(cells + more).cells
    figure = benchmark_figure(
        "fashion_mnist",
        table(results),
        skipped(results),
        "AMD EPYC (AVX512), 2 cores, no GPU, torch 2.14.1+cu130, CUDA 13.0",
    )
    assert overlapping_texts(figure) == []


def test_the_sweep_figure_s_texts_do_not_overlap():
    tables = {
        curve: pd.DataFrame(
            {
                "value": [1, 4, 12, 24],
                "median_s": [5.0, 1.0, 1.5, 3.0],
                "p25_s": [4.0, 0.9, 1.4, 2.9],
                "p75_s": [6.0, 1.2, 1.6, 3.1],
            }
        )
        for curve in ("gpipe", "1f1b")
    }
    single = StepTimes(steps=8, median=2.0, p25=1.9, p75=2.1, min=1.8, max=2.2, total=16.0)
    lines = {"single": single, "model_parallel": SkippedCell(status="skipped", reason="needs 2")}
    figure = sweep_figure(
        "resnet50: pipeline over pipeline.split_size.resnet50 (split_size, quick "
        "scale)\nmeasured on AMD EPYC (AVX512), 2 cores, no GPU, torch 2.14.1+cu130, CUDA 13.0",
        "pipeline.split_size.resnet50",
        tables,
        lines,
        ["1f1b pipeline.split_size.resnet50=4 skipped: 1f1b needs micro-batches"],
    )
    assert overlapping_texts(figure) == []


def test_the_epoch_figure_s_texts_do_not_overlap():
    def curve(final: float) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "epoch": [1, 2, 3],
                "train_loss": [2.0, 1.0, 0.5],
                "train_acc": [0.5, 0.7, final],
                "test_acc": [0.5, 0.68, final - 0.01],
            }
        )

    figure = epoch_figure(
        "fashion_mnist",
        {"train: ddp": curve(0.9), "reference: single": curve(0.88)},
        "AMD EPYC (AVX512), 2 cores, no GPU, torch 2.14.1+cu130, CUDA 13.0",
    )
    assert overlapping_texts(figure) == []


def test_the_check_sees_an_overlap():
    figure = Figure()
    axis = figure.add_subplot()
    axis.text(0.5, 0.5, "one label")
    axis.text(0.5, 0.5, "another label")
    assert overlapping_texts(figure) == [("one label", "another label")]
