"""What a strategy records of itself: the base of every strategy's own record (its run's `strategy_details`)."""

from typing import Any

from pydantic import BaseModel, ConfigDict


class Details(BaseModel):
    """What a strategy records of its own choices and measurements (a run's `strategy_details`): each strategy's own
    subclass, read back by Strategy.details_of; the base records nothing. The report asks a record what it needs
    (time_parts, why_stages_wait), never which strategy wrote it."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def recorded(self) -> dict[str, Any]:
        """As a run's results record it (`strategy_details`): what it holds, nothing left unknown."""
        return self.model_dump(mode="json", exclude_none=True)

    def time_parts(self, forward_backward: float) -> dict[str, float] | None:
        """The parts of a cut model's forward and backward from its stages' seconds; None: not cut."""
        return None

    def why_stages_wait(self) -> str | None:
        """Why its stages cannot overlap here, where they cannot; None: nothing to say."""
        return None
