"""Counting a run against its :class:`~reasonloop.reasoning.base.Budget`."""

from __future__ import annotations

import time

from reasonloop.events import StopReason, Usage
from reasonloop.reasoning.base import Budget

__all__ = ["BudgetTracker"]


class BudgetTracker:
    """Rounds, tool calls, tokens and wall time of one run.

    The first limit reached is kept in :attr:`stop_reason`; strategies check
    :meth:`exhausted` before each round and ask :meth:`take_tool_slots` before running tools.

    Args:
        budget: The limits.
        usage: The run's usage, updated by the LLM and tool helpers (shared, not copied).
    """

    __slots__ = ("budget", "deadline", "last_finish", "rounds", "stop_reason", "usage")

    def __init__(self, budget: Budget, usage: Usage) -> None:
        self.budget = budget
        self.usage = usage
        self.rounds = 0
        self.stop_reason: StopReason | None = None
        self.last_finish = "stop"
        """How the run's latest model call ended (``length``: at its output limit)."""
        self.deadline = time.monotonic() + budget.timeout_s if budget.timeout_s else None

    def hit(self, reason: StopReason) -> None:
        """Record that a limit ended the loop (the first one wins)."""
        if self.stop_reason is None:
            self.stop_reason = reason

    def exhausted(self) -> StopReason | None:
        """The limit that forbids another round, if any (and record it)."""
        if self.stop_reason is not None:
            return self.stop_reason
        b = self.budget
        if self.rounds >= b.max_rounds:
            self.hit("max_rounds")
        elif b.max_tokens is not None and self.usage.prompt_tokens + self.usage.completion_tokens >= b.max_tokens:
            self.hit("max_tokens")
        elif self.deadline is not None and time.monotonic() >= self.deadline:
            self.hit("timeout")
        return self.stop_reason

    def start_round(self) -> None:
        self.rounds += 1

    def take_tool_slots(self, wanted: int) -> int:
        """How many of ``wanted`` calls may run; records ``max_tool_calls`` when some may not."""
        left = self.budget.max_tool_calls - self.usage.tool_calls
        granted = wanted
        if wanted > left:
            self.hit("max_tool_calls")
            granted = left if left > 0 else 0
        self.usage.tool_calls += granted
        return granted

    def time_left(self) -> float | None:
        """Seconds until the deadline (``None`` without one)."""
        return None if self.deadline is None else self.deadline - time.monotonic()
