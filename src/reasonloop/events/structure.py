"""A run's structure as data: the plan a strategy means to follow, the searches it makes itself
outside a tool round, and the route the ``auto`` mode chose.

The calls that carry out a plan (:class:`~reasonloop.events.ToolCall`) name their step; these events
say what the steps are, so a surface can draw a run's shape without knowing its strategy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from reasonloop.events.base import Citation, _EventBase


@dataclass(slots=True)
class PlannedStep:
    """One step of a :class:`Plan`."""

    id: str
    """The step's id as the plan names it: ``E1`` (ReWOO), ``1`` (decompose's first sub-question)."""
    tool: str
    """The tool the step calls, or ``search`` for a search the strategy makes itself (a
    decompose sub-question's, reported by a :class:`Searched` event)."""
    input: str
    """The input as planned: references to earlier steps (``#E1``, ``#1``) are filled in with
    their results when the step runs."""
    depends_on: list[str] = field(default_factory=list)
    """The ids of the earlier steps whose results the input uses: the step runs after them."""
    reason: str = ""
    """What the step is for, when the plan says (ReWOO's ``Plan:`` line)."""
    problem: str | None = None
    """Why the step cannot run (an unknown tool, a reference to a later step): it fails unrun."""

    def line(self) -> str:
        """The step in one line, as a trace shows it: ``#E2 lookup: #E1 and sea (after #E1)``."""
        after = f" (after {', '.join('#' + d for d in self.depends_on)})" if self.depends_on else ""
        return f"#{self.id} {self.tool}: {self.input}{after}"


@dataclass(slots=True, kw_only=True)
class Plan(_EventBase):
    """The steps a strategy means to take, before it takes them: ReWOO's plan, decompose's
    sub-questions. Each step is carried out by a :class:`ToolCall` (or a :class:`Searched`)
    naming it in ``step``."""

    type: Literal["plan"] = "plan"
    steps: list[PlannedStep] = field(default_factory=list)
    attempt: int = 1
    """1 for the first plan; 2 for a plan written again (ReWOO replans after failed steps): its
    steps replace the earlier plan's, and may reuse their ids."""


@dataclass(slots=True, kw_only=True)
class Searched(_EventBase):
    """A search of the knowledge base the strategy made itself, outside a tool round (qa's
    retrieval, a decompose sub-question's): not a tool call, and not counted as one
    (:attr:`Usage.searches` counts it)."""

    type: Literal["searched"] = "searched"
    query: str
    step: str | None = None
    """The id of the :class:`Plan` step it carries out (a decompose sub-question's ``1``)."""
    queries: list[str] = field(default_factory=list)
    """Other phrasings of the query searched with it (multi-query)."""
    hypothetical: list[str] = field(default_factory=list)
    """Hypothetical answers searched by their meaning (HyDE)."""
    top_k: int = 0
    hits: int = 0
    """How many passages were found (the hit lists of every query fused)."""
    hit_ids: list[str] = field(default_factory=list)
    """Their chunk ids, best first."""
    evidence: str = ""
    """The passages as the model was shown them, numbered (trimmed to the evidence budget)."""
    citations: list[Citation] = field(default_factory=list)
    """The passages shown, as citations (their ``marker`` is their number in ``evidence``)."""

    def request(self) -> dict[str, Any]:
        """What was searched, as a step's ``action_input``: ``query`` and ``top_k``, with the other
        phrasings (``queries``) and the hypothetical answer (``hyde``) when there were any."""
        out: dict[str, Any] = {"query": self.query, "top_k": self.top_k}
        if self.queries:
            out["queries"] = self.queries
        if self.hypothetical:
            out["hyde"] = self.hypothetical[0]
        return out


RouteName = Literal["none", "single", "multi_hop", "research"]
"""How much searching a question needs: none, one search, several hops, a research run."""


@dataclass(slots=True, kw_only=True)
class Route(_EventBase):
    """The route the ``auto`` mode chose for the question, and why, before the chosen strategy's
    events (which follow in the same run)."""

    type: Literal["route"] = "route"
    route: RouteName
    strategy: str
    """The strategy id that answers (``""`` for the route ``none``: one answer without searching)."""
    reason: str = ""
    """Why, in a few words: the model's own reason, or the features the rule saw."""
    decided_by: Literal["model", "rule"] = "rule"
    """``model``: the model's JSON decision; ``rule``: the fallback rule (the model did not answer
    in the format, refused, or was not asked)."""
    wanted: RouteName | None = None
    """The route decided before the budget was applied, when the budget ruled it out."""
