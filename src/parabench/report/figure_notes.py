"""Notes under a figure (a skipped cell and why, a curve's caveat), wrapped to the figure's width so none is cut."""

import textwrap

from matplotlib.figure import Figure

POINTS_PER_CHARACTER = 4.2  # the width of a character at font size 7, in points (72 to the inch)


def add_notes(figure: Figure, notes: list[str]) -> None:
    """Each note wrapped to the figure's width, under everything else (saving with bbox_inches="tight" keeps them)."""
    if not notes:
        return
    width = int(figure.get_figwidth() * 72 / POINTS_PER_CHARACTER)
    text = "\n".join(textwrap.fill(note, width) for note in notes)
    figure.text(0.01, -0.01, text, fontsize=7, va="top", ha="left")
