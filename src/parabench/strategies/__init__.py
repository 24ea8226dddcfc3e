"""The strategy registry: adding a strategy is one file, one line here and its name in options.StrategyName."""

from parabench.strategies import allreduce, ddp, dp, fsdp, model_parallel, pipeline, single
from parabench.strategies.base import Parallelized, Strategy

STRATEGIES: dict[str, Strategy] = {
    s.name: s
    for s in (
        single.STRATEGY,
        dp.STRATEGY,
        ddp.STRATEGY,
        allreduce.STRATEGY,
        model_parallel.STRATEGY,
        pipeline.STRATEGY,
        fsdp.STRATEGY,
    )
}

__all__ = ["STRATEGIES", "Parallelized", "Strategy"]
