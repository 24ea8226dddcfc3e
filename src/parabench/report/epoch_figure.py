"""A workload's per-epoch curves, run against its reference: the scores and the training loss."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.figure import Figure

SCORE_SUFFIXES = ("_acc",)


def epoch_figure(workload: str, curves: dict[str, pd.DataFrame], machine: str) -> Figure:
    """Left, every accuracy column per epoch; right, the training loss; the run's lines solid, the reference's
    dashed (`curves`: a label such as "train: ddp" -> that run's plots/<role>/<workload>.csv)."""
    figure, (scores, loss) = plt.subplots(1, 2, figsize=(11, 4.2))
    figure.subplots_adjust(wspace=0.3, top=0.8)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (label, frame), style in zip(curves.items(), ("-", "--", ":")):
        columns = [column for column in frame.columns if column.endswith(SCORE_SUFFIXES)]
        for colour, column in zip(colours, columns):
            scores.plot(frame["epoch"], frame[column], style, color=colour, marker="o", label=f"{column}, {label}")
        loss.plot(frame["epoch"], frame["train_loss"], style, color=colours[0], marker="o", label=label)
    scores.set(xlabel="epoch", ylabel="accuracy", title="accuracy per epoch")
    loss.set(xlabel="epoch", ylabel="training loss", title="training loss per epoch")
    if not scores.lines:
        scores.text(
            0.5,
            0.5,
            "no accuracy: the data are synthetic (time only)",
            ha="center",
            va="center",
            transform=scores.transAxes,
            fontsize=9,
        )
    for axis in (scores, loss):
        axis.title.set_fontsize(9)
        if axis.lines:
            axis.legend(fontsize=7)
        axis.xaxis.get_major_locator().set_params(integer=True)
    figure.suptitle(f"{workload}: the training run and its reference\nmeasured on {machine}", fontsize=10)
    return figure
