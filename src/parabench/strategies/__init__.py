"""The strategy registry: adding a strategy is one file and one line here."""

from parabench.strategies import ddp, single
from parabench.strategies.base import Parallelized, Strategy

STRATEGIES: dict[str, Strategy] = {s.name: s for s in (single.STRATEGY, ddp.STRATEGY)}

__all__ = ["STRATEGIES", "Parallelized", "Strategy"]
