"""The strategy registry: adding a strategy is one file, one line here and its name in options.StrategyName.

It lives beside the strategies, not in the package's __init__: importing one module of the package (its options,
read by the params schema) must not import every strategy, or every stage would depend on every strategy's file."""

from parabench.strategies import allreduce, ddp, dp, fsdp, model_parallel, pipeline, single, zero
from parabench.strategies.base import Strategy

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
        zero.STRATEGY,
    )
}
BASELINE = next(name for name, strategy in STRATEGIES.items() if strategy.baseline)
HEADLINE = next(name for name, strategy in STRATEGIES.items() if strategy.headline)
REFERENCE_LINES = tuple(name for name, strategy in STRATEGIES.items() if strategy.reference_line)  # the baseline first
