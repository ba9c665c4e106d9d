"""Counting a run against its :class:`~reasonloop.reasoning.base.Budget`."""

from __future__ import annotations

import time

from reasonloop.events import StopReason, Usage
from reasonloop.reasoning.base import Budget
from reasonloop.tools.base import Pauses

__all__ = ["BudgetTracker"]


class BudgetTracker:
    """Rounds, tool calls, tokens and wall time of one run.

    The first limit reached is kept in :attr:`stop_reason`; strategies check
    :meth:`exhausted` before each round and ask :meth:`take_tool_slots` before running tools.

    The time budget does not run while the run waits for a person (``pauses``): the deadline
    moves by the time waited, and there is none while a wait lasts.

    Args:
        budget: The limits.
        usage: The run's usage, updated by the LLM and tool helpers (shared, not copied).
        pauses: The run's waits for people (``RunScope.pauses``).
    """

    __slots__ = ("_deadline", "budget", "last_finish", "pauses", "rounds", "stop_reason", "usage")

    def __init__(self, budget: Budget, usage: Usage, pauses: Pauses | None = None) -> None:
        self.budget = budget
        self.usage = usage
        self.pauses = pauses
        self.rounds = 0
        self.stop_reason: StopReason | None = None
        self.last_finish = "stop"
        """How the run's latest model call ended (``length``: at its output limit)."""
        self._deadline = time.monotonic() + budget.timeout_s if budget.timeout_s else None

    @property
    def deadline(self) -> float | None:
        """When the time budget runs out (``time.monotonic()``), later by the time spent waiting
        for people; None without a time budget."""
        if self._deadline is None or self.pauses is None:
            return self._deadline
        return self._deadline + self.pauses.paused_s()

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
        elif (deadline := self.deadline) is not None and time.monotonic() >= deadline:
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
        """Seconds until the deadline (``None`` without one, or while the run waits for a person)."""
        if self.pauses is not None and self.pauses.waiting:
            return None
        deadline = self.deadline
        return None if deadline is None else deadline - time.monotonic()
