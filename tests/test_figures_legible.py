"""Figures people can read: no two pieces of text (titles, tick labels, bar notes, legend entries, notes) overlap."""

from itertools import combinations

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from parabench.report.benchmark import skipped, summarize_cells, table
from parabench.report.benchmark_figure import benchmark_figure
from tests.test_benchmark_report import entries


def overlapping_texts(figure: Figure) -> list[tuple[str, str]]:
    """Pairs of visible, non-empty texts of the rendered figure whose boxes intersect."""
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    undrawn = {id(label) for axes in figure.axes for axis in (axes.xaxis, axes.yaxis) for tick in axis.get_major_ticks()
               if not min(axis.get_view_interval()) <= tick.get_loc() <= max(axis.get_view_interval())
               for label in (tick.label1, tick.label2)}  # a tick outside the view is not drawn
    texts = [text for text in figure.findobj(Text)
             if text.get_visible() and text.get_text().strip() and id(text) not in undrawn]
    boxes = [(text.get_text(), text.get_window_extent(renderer)) for text in texts]
    return [(first, second) for (first, a), (second, b) in combinations(boxes, 2) if a.overlaps(b)]


def test_the_benchmark_figure_s_texts_do_not_overlap():
    results = summarize_cells(entries())
    figure = benchmark_figure("fashion_mnist", table(results), skipped(results))
    assert overlapping_texts(figure) == []


def test_the_check_sees_an_overlap():
    figure = Figure()
    axis = figure.add_subplot()
    axis.text(0.5, 0.5, "one label")
    axis.text(0.5, 0.5, "another label")
    assert overlapping_texts(figure) == [("one label", "another label")]
