"""The research's budget: the run's limits, the share held back for the judge and the report, and
each sub-agent's share of what is left.

Its own module because the strategy's loop and its sub-agents both ask it whether the research
must end, and only the sub-agents ask it for their shares.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from reasonloop.events import Usage
from reasonloop.reasoning.base import Budget
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.strategies.research.settings import ResearchSettings

__all__ = ["ResearchBudget", "run_budget"]


def run_budget(settings: ResearchSettings, cap: Budget | None) -> Budget:
    """The run's limits: the settings', each lowered to the caller's ``cap`` when it has one."""
    s = settings
    if cap is None:
        return Budget(
            max_rounds=s.max_rounds, max_tool_calls=s.max_tool_calls, max_tokens=s.max_tokens, timeout_s=s.timeout_s
        )
    return Budget(
        max_rounds=min(s.max_rounds, cap.max_rounds),
        max_tool_calls=min(s.max_tool_calls, cap.max_tool_calls),
        max_tokens=min((t for t in (s.max_tokens, cap.max_tokens) if t is not None), default=None),
        timeout_s=min((t for t in (s.timeout_s, cap.timeout_s) if t is not None), default=None),
    )


@dataclass(slots=True)
class ResearchBudget:
    """What the research may spend: ``limits`` for the whole run, of which ``report_share`` of the
    time (``time_reserve_s``, before :attr:`research_deadline`) and of the tokens (``token_reserve``)
    is kept for the end. Time spent waiting for a person does not count, as for every strategy."""

    limits: Budget
    tracker: BudgetTracker
    usage: Usage
    time_reserve_s: float
    token_reserve: int

    @classmethod
    def reserve(cls, limits: Budget, tracker: BudgetTracker, usage: Usage, report_share: float) -> ResearchBudget:
        reserve_s = report_share * (limits.timeout_s or 0)
        return cls(limits, tracker, usage, reserve_s, int((limits.max_tokens or 0) * report_share))

    @property
    def research_deadline(self) -> float | None:
        """When the research time is up (``time.monotonic()``): the run's deadline, moved by the time
        waited for people, less the report's reserve; None without a time budget or while a wait lasts."""
        deadline, pauses = self.tracker.deadline, self.tracker.pauses
        if deadline is None or (pauses is not None and pauses.waiting):
            return None
        return deadline - self.time_reserve_s

    def out_of_research(self) -> str | None:
        """The limit that ends the research (the report is then written), if one is reached."""
        tracker, usage = self.tracker, self.usage
        if tracker.stop_reason in ("timeout", "max_tokens"):
            return tracker.stop_reason
        deadline = self.research_deadline
        if deadline is not None and time.monotonic() >= deadline:
            tracker.hit("timeout")
        elif self.limits.max_tokens is not None and usage.total_tokens >= self.limits.max_tokens - self.token_reserve:
            tracker.hit("max_tokens")
        elif usage.tool_calls >= self.limits.max_tool_calls:
            tracker.hit("max_tool_calls")
        return tracker.stop_reason

    def shares(self, n: int) -> list[tuple[int | None, int]]:
        """Each of ``n`` sub-agents' (tokens, tool calls): equal shares of what the run has left."""
        usage, budget = self.usage, self.limits
        tools_left = max(0, budget.max_tool_calls - usage.tool_calls)
        tokens = None
        if budget.max_tokens is not None:
            left = budget.max_tokens - self.token_reserve - usage.total_tokens
            tokens = max(1, left // n)
        return [(tokens, tools_left // n + (1 if i < tools_left % n else 0)) for i in range(n)]

    def research_time_left(self) -> float | None:
        """Seconds until the research deadline (``None`` without one); negative once it has passed."""
        deadline = self.research_deadline
        return None if deadline is None else deadline - time.monotonic()
