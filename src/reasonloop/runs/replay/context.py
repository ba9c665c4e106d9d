"""A run's context put under its step journal: its models and tools answer from it when they can."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reasonloop.llm.base import LLM
from reasonloop.reasoning.base import RunContext
from reasonloop.runs.replay.model import JournaledLLM
from reasonloop.runs.replay.steps import StepJournal
from reasonloop.runs.replay.tools import JournaledTool
from reasonloop.tools.base import Tool

__all__ = ["JournaledTools", "journaled"]


def journaled(ctx: RunContext, journal: StepJournal) -> RunContext:
    """``ctx`` with its models (reasoning, planner, solver, the one its tools use) and its tools
    wrapped for ``journal``: calls recorded before are replayed, the others recorded once done.
    The journal is also the run's :attr:`~reasonloop.reasoning.base.RunContext.checkpoints`.

    Tools the run adds later (those of MCP servers, loaded when it starts) are wrapped as they
    join. The agent's own tool table is not changed: the run gets a table of its own.
    """
    wrapped: dict[int, JournaledLLM] = {}

    def wrap(llm: LLM | None) -> Any:
        if llm is None or isinstance(llm, JournaledLLM):
            return llm
        model = wrapped.get(id(llm))
        if model is None:
            model = wrapped[id(llm)] = JournaledLLM(llm, journal)
        return model

    ctx.scope.llm = wrap(ctx.scope.llm) if isinstance(ctx.scope.llm, LLM) else ctx.scope.llm
    ctx.llm = wrap(ctx.llm)
    ctx.planner_llm = wrap(ctx.planner_llm)
    ctx.solver_llm = wrap(ctx.solver_llm)
    ctx.tools = JournaledTools(journal, ctx.tools, lambda sub: journaled(sub, journal))
    ctx.checkpoints = journal  # a research run's finished sub-research, kept whole
    return ctx


class JournaledTools(dict[str, Tool]):
    """A run's tools by name, each wrapped for the run's journal as it is put in."""

    def __init__(self, journal: StepJournal, tools: Mapping[str, Tool], wrap_context: Any) -> None:
        super().__init__()
        self._journal = journal
        self._wrap_context = wrap_context
        self.update(tools)

    def _wrap(self, tool: Tool) -> Tool:
        if isinstance(tool, JournaledTool):
            return tool
        return JournaledTool(tool, self._journal, self._wrap_context)

    def __setitem__(self, name: str, tool: Tool) -> None:
        super().__setitem__(name, self._wrap(tool))

    def setdefault(self, name: str, tool: Tool = None) -> Tool:  # type: ignore[assignment]
        if name not in self:
            self[name] = tool
        return self[name]

    def update(self, *others: Mapping[str, Tool] | Iterable[tuple[str, Tool]], **named: Tool) -> None:  # type: ignore[override]
        for other in others:
            items = other.items() if isinstance(other, Mapping) else other
            for name, tool in items:
                self[name] = tool
        for name, tool in named.items():
            self[name] = tool
