"""What a run returns at the end: :class:`RunResult` (the answer with its evidence, its trace of
steps (:class:`Step`) and what it consumed) and the run's :class:`RunMeta`.

Its own module because a result is read after the stream, by callers that never see an event
(``Agent.run``, ``GET /v1/runs/{id}``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, field_serializer

from reasonloop.events.base import Citation, StopReason, Usage


# A plain dataclass: strategies make one per tool call; pydantic validates and serialises
# it wherever it is part of a model (RunResult).
@dataclass(slots=True)
class Step:
    """One action a strategy took and what it observed."""

    action: str
    action_input: Any = None
    """What the tool received."""
    observation: str = ""
    error: dict[str, Any] | None = None
    planned_input: Any = None
    """The input as a plan wrote it, before earlier steps' evidence was put in (ReWOO's
    ``#E1`` references); None when the strategy had no plan."""


class RunMeta(BaseModel):
    run_id: str
    reasoning: str
    ran: str = ""
    """What actually answered, when it differs from ``reasoning`` (see :attr:`RunStarted.ran`)."""
    model: str = ""
    """The model that answered, ``provider:model``."""
    model_chosen_by: str = ""
    """Set when ``[llm] provider = "auto"`` picked a model served on this machine: which, and how
    to choose another."""
    started_at: float
    ended_at: float | None = None


class RunResult(BaseModel):
    """Everything a caller needs after a run: the answer, its evidence and the trace."""

    content: str
    citations: list[Citation] = Field(default_factory=list)
    steps: list[Step] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    stop_reason: StopReason = "final"
    abstained: bool = False
    """The answer says the documents do not decide the question (see :attr:`Answer.abstained`)."""
    meta: RunMeta
    error: dict[str, Any] | None = None

    @field_serializer("steps")
    def _steps(self, steps: list[Step]) -> list[dict[str, Any]]:
        """Each step as ``{action, action_input, observation, error}``, with ``planned_input`` only
        where a plan wrote the input."""
        out = []
        for step in steps:
            item = {"action": step.action, "action_input": step.action_input, "observation": step.observation}
            item["error"] = step.error
            if step.planned_input is not None:
                item["planned_input"] = step.planned_input
            out.append(item)
        return out
