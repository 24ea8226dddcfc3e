"""The dataset registry: each dataset by its stages' name, and a provenance record told in its dataset's words."""

from typing import Any

from parabench.data.dataset import Dataset
from parabench.data.fashion_mnist import FASHION_MNIST
from parabench.data.hotdog import HOTDOG
from parabench.data.miniimagenet import MINIIMAGENET
from parabench.data.provenance import Provenance

DATASETS: dict[str, Dataset[Any]] = {dataset.name: dataset for dataset in (FASHION_MNIST, HOTDOG, MINIIMAGENET)}


def origin_sentence(provenance: Provenance) -> str:
    """The data_origin sentence of a provenance record: what the data is, with details, then where it came from."""
    return DATASETS[provenance.dataset].origin_sentence(provenance)


def origin_summary(provenance: Provenance) -> str:
    """What a provenance record's data is, without details: short enough for a table."""
    return DATASETS[provenance.dataset].origin_summary(provenance)


def origin_tag(provenance: Provenance) -> str:
    """What a provenance record's data is in a few words, for a metrics column."""
    return DATASETS[provenance.dataset].origin_tag(provenance)
