"""A run's tools with its step journal: a tool call that finished before is never run again.

:class:`JournaledTool` wraps one tool for one run. A call is keyed by the tool and its arguments
and how many identical calls came before it (:meth:`StepJournal.key`). When the journal has the
key, the recorded output is returned and the tool does not run (its side effects happened
once). Otherwise the tool runs and, once it has returned (failures the model reads included),
its output is recorded with what the call changed in the run besides it:

* the passages it numbered in the run's evidence (a search): the replay gives them the same
  numbers, so later prompts and citations read as they did;
* the model usage it added to the run (``summarize``, a sub-agent);
* the answer text it streamed as the run's answer (``summarize``): sent again on the replay, as
  a resumed run's answer starts over.

A sub-agent offered as a tool (:class:`~reasonloop.tools.agent_tool.AgentTool`) that had not
finished runs again with the same journal around its own model and tools, and a run id made from
its call's key, so its finished steps are replayed too and its events read as they did.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from reasonloop.events import AnswerDelta, Citation, Event, Usage
from reasonloop.kb.base import Hit
from reasonloop.llm.base import ToolSpec
from reasonloop.reasoning.formats.prompts import tool_spec
from reasonloop.runs.replay.steps import StepJournal, digest
from reasonloop.tools.agent_tool import AgentTool
from reasonloop.tools.base import Tool, ToolContext, ToolOutput

__all__ = ["JournaledTool", "decode_call", "sub_run_id"]

_USAGE_FIELDS = tuple(f.name for f in dataclasses.fields(Usage))

WrapContext = Callable[[Any], Any]
"""Puts a sub-agent's run context under the journal (``reasonloop.runs.replay.journaled``)."""


def sub_run_id(parent_run_id: str, key: str) -> str:
    """The run id of the sub-agent started by the tool call ``key`` of run ``parent_run_id``: the
    same on a replay (an agent would give it a random one), so the sub-run's events read as they did."""
    return digest([parent_run_id, key])


@dataclasses.dataclass(slots=True)
class _Recorded:
    out: ToolOutput
    evidence: list[tuple[int, Hit]]
    usage: Usage
    deltas: list[str]


def _encode(out: ToolOutput, evidence: list[tuple[int, Hit]], usage: Usage, deltas: list[str]) -> str:
    return json.dumps(
        {
            "text": out.text,
            "citations": [c.model_dump(mode="json") for c in out.citations],
            "data": to_jsonable_python(out.data, serialize_unknown=True),
            "error": to_jsonable_python(out.error, serialize_unknown=True),
            "elapsed_s": out.elapsed_s,
            "evidence": [[number, hit.model_dump(mode="json")] for number, hit in evidence],
            "usage": {name: getattr(usage, name) for name in _USAGE_FIELDS},
            "deltas": deltas,
        },
        ensure_ascii=False,
    )


def decode_call(value: str) -> _Recorded:
    """A recorded tool call.

    Raises:
        ValueError: the value is not one (a pydantic ValidationError is a ValueError too).
    """
    data = json.loads(value)
    if not isinstance(data, dict) or not isinstance(data.get("text"), str):
        raise ValueError("not a recorded tool call")
    error = data.get("error")
    if error is not None and not isinstance(error, dict):
        raise ValueError("the recorded error is not an object")
    usage = data.get("usage") or {}
    deltas = data.get("deltas") or []
    if not isinstance(usage, dict) or not all(type(usage.get(n, 0)) is int for n in _USAGE_FIELDS):
        raise ValueError("the recorded usage is not counts")
    if not isinstance(deltas, list) or not all(isinstance(d, str) for d in deltas):
        raise ValueError("the recorded answer text is not text")
    evidence = []
    for item in data.get("evidence") or []:
        if not (isinstance(item, list) and len(item) == 2 and type(item[0]) is int):
            raise ValueError("a recorded passage has no number")
        evidence.append((item[0], Hit.model_validate(item[1])))
    out = ToolOutput(
        text=data["text"],
        citations=[Citation.model_validate(c) for c in data.get("citations") or []],
        data=data.get("data"),
        error=error,
        elapsed_s=float(data.get("elapsed_s") or 0.0),
    )
    return _Recorded(out, evidence, Usage(**{n: usage.get(n, 0) for n in _USAGE_FIELDS}), deltas)


def _arguments(arguments: Mapping[str, Any] | BaseModel) -> Any:
    if isinstance(arguments, BaseModel):
        return arguments.model_dump(mode="json")
    return dict(arguments or {})


class JournaledTool(Tool):
    """``inner`` for one run, its calls answered from the run's :class:`StepJournal` when recorded.

    Everything but :meth:`invoke` is the wrapped tool's (its schema, timeout, whether it
    delegates or emits events).
    """

    def __init__(self, inner: Tool, journal: StepJournal, wrap_context: WrapContext | None = None) -> None:
        self.inner = inner
        self.journal = journal
        self.wrap_context = wrap_context
        self.name = inner.name  # type: ignore[misc]
        self.description = inner.description  # type: ignore[misc]
        self.Params = inner.Params  # type: ignore[misc]
        self.timeout_s = inner.timeout_s
        self.max_output_chars = inner.max_output_chars

    def __getattr__(self, name: str) -> Any:  # what only some tools have (emits_events, tool_calls_made)
        return getattr(self.inner, name)

    def spec(self) -> ToolSpec:
        return tool_spec(self.inner)  # the wrapped tool's, built once for every run

    async def invoke(self, arguments: Mapping[str, Any] | BaseModel, ctx: ToolContext) -> ToolOutput:
        """The recorded output of this call, or the wrapped tool's (recorded once it returned)."""
        key = self.journal.key("tool", [self.name, _arguments(arguments)])
        value = self.journal.take(key)
        if value is not None:
            try:
                recorded = decode_call(value)
            except ValueError as exc:
                self.journal.unreadable(key, str(exc))
            else:
                self.journal.replayed += 1
                return await _replay(recorded, ctx)
        return await self._live(key, arguments, ctx)

    async def _live(self, key: str, arguments: Mapping[str, Any] | BaseModel, ctx: ToolContext) -> ToolOutput:
        usage, deltas = Usage(), []
        log = ctx.scope.evidence
        before = set(log.hits) if log is not None else set()
        emit = ctx.emit
        if emit is not None:
            forward = emit

            async def emit(event: Event) -> None:
                if isinstance(event, AnswerDelta) and event.depth == ctx.depth:
                    deltas.append(event.text)
                await forward(event)

        try:
            out = await self._for_call(key, ctx).invoke(arguments, dataclasses.replace(ctx, usage=usage, emit=emit))
        finally:
            if ctx.usage is not None:  # what the call consumed, also when it was cancelled
                ctx.usage.add(usage)
        log = ctx.scope.evidence
        numbered = [(n, log.hits[n]) for n in log.hits if n not in before] if log is not None else []
        self.journal.keep(key, _encode(out, numbered, usage, deltas))
        return out

    def _for_call(self, key: str, ctx: ToolContext) -> Tool:
        """The tool to run: a sub-agent under the journal, with a run id its call's key gives."""
        inner = self.inner
        if not isinstance(inner, AgentTool) or self.wrap_context is None:
            return inner
        clone = copy.copy(inner)
        clone.agent = _JournaledAgent(inner.agent, sub_run_id(ctx.run_id, key), self.wrap_context)
        return clone


async def _replay(recorded: _Recorded, ctx: ToolContext) -> ToolOutput:
    """Give the run what the call gave it the first time, and its output."""
    if recorded.evidence:
        log = ctx.scope.evidence_log()
        for number, hit in recorded.evidence:
            log.restore(number, hit)
    if ctx.usage is not None:
        ctx.usage.add(recorded.usage)
    if recorded.deltas and ctx.emit is not None:
        for text in recorded.deltas:
            await ctx.emit(AnswerDelta(text=text, depth=ctx.depth))
    return recorded.out


class _JournaledAgent:
    """A sub-agent whose runs (each made for one tool call) are under the parent run's journal."""

    def __init__(self, agent: Any, run_id: str, wrap_context: WrapContext) -> None:
        self._agent = agent
        self._run_id = run_id
        self._wrap = wrap_context

    def __getattr__(self, name: str) -> Any:
        return getattr(self._agent, name)

    def context(self, *args: Any, **kwargs: Any) -> Any:
        ctx = self._agent.context(*args, **kwargs)
        ctx.run_id = self._run_id
        return self._wrap(ctx)
