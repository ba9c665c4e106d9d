"""The Python API: an :class:`Agent` answers questions with one reasoning strategy.

Example::

    agent = Agent(reasoning="react", llm="openai:gpt-4o-mini", kb=KnowledgeBase.open("kb"))
    async for event in agent.stream("What does the warranty cover?"):
        print(event.type, event)
    result = await agent.run("And for how long?", history=[...])
    print(result.content, result.citations, result.usage)

The stream starts with :class:`~reasonloop.events.RunStarted` and ends with exactly one
:class:`~reasonloop.events.Answer` or :class:`~reasonloop.events.ErrorEvent`; every event is
stamped with the run id and a gap-free ``seq``. Cancelling the task that consumes the stream
cancels the model and tool calls in flight and leaves no task behind.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from reasonloop.errors import ConfigError, ReasonLoopError, RunError
from reasonloop.events import (
    Answer,
    AnswerDelta,
    ErrorEvent,
    Event,
    EventStamper,
    RunMeta,
    RunResult,
    RunStarted,
)
from reasonloop.kb.base import Retriever
from reasonloop.llm.base import LLM, Message
from reasonloop.reasoning.base import Budget, Reasoning, RunContext
from reasonloop.reasoning.builtins import resolve
from reasonloop.registry import Registry
from reasonloop.tools.base import Tool
from reasonloop.tools.docsearch import DocSearchTool

__all__ = ["Agent", "ask"]

HistoryItem = Message | Mapping[str, Any]


def _retrievers_of(kb: Any) -> list[Retriever]:
    if kb is None:
        return []
    if isinstance(kb, list | tuple):
        return [r for item in kb for r in _retrievers_of(item)]
    if callable(getattr(kb, "retriever", None)):
        return [kb.retriever()]
    if callable(getattr(kb, "search", None)):
        return [kb]
    raise ConfigError(f"kb must be a knowledge base, a retriever or a list of them, not {type(kb).__name__}")


def _history(items: Sequence[HistoryItem] | None) -> list[Message]:
    out = []
    for item in items or ():
        message = item if isinstance(item, Message) else Message.model_validate(dict(item))
        if message.role != "system":
            out.append(message)
    return out


class Agent:
    """Answers questions with one strategy over a set of LLMs, tools and knowledge sources.

    Args:
        reasoning: Strategy id (``qa``, ``decompose``, ``react``, ``toolcall``, ``rewoo`` or a
            plugin's) or a :class:`Reasoning` subclass.
        llm: An LLM, a ``provider:model`` spec, or ``None`` for the configured one (resolved
            on first use).
        kb: A knowledge base (anything with ``retriever()``), a retriever, or a list of them.
        tools: Tools or tool ids. ``None`` gives tool-using strategies ``docsearch`` when
            there is a knowledge base; ``docsearch`` is also added to an explicit list then.
        settings: The strategy's settings (validated now).
        instructions: User instructions appended to the built-in prompts.
        planner_llm: Model for planning (ReWOO); defaults to ``llm``.
        solver_llm: Model for the final synthesis (ReWOO); defaults to ``llm``.
        budget: A cap overriding the strategy's budget settings.
        language: Answer language; ``None`` follows each question.
        services: Extra shared resources handed to tools.
        registry: Where ids are looked up (default: the process registry).

    Raises:
        PluginNotFound: an unknown strategy or tool id.
        ConfigError: invalid settings, a bad ``kb``, or two tools with one name.
    """

    def __init__(
        self,
        reasoning: str | type[Reasoning] = "react",
        llm: LLM | str | None = None,
        kb: Any = None,
        tools: Sequence[Tool | str] | None = None,
        settings: Mapping[str, Any] | BaseModel | None = None,
        instructions: Sequence[str] | str = (),
        *,
        planner_llm: LLM | str | None = None,
        solver_llm: LLM | str | None = None,
        budget: Budget | Mapping[str, Any] | None = None,
        language: str | None = None,
        services: Mapping[str, Any] | None = None,
        registry: Registry | None = None,
    ) -> None:
        self.registry = registry
        self.strategy: type[Reasoning] = (
            resolve("reasoning", reasoning, registry) if isinstance(reasoning, str) else reasoning
        )
        self.reasoning_id = self.strategy.info.id
        self.settings = self.strategy.validate_settings(settings)
        self._llm, self._planner_llm, self._solver_llm = llm, planner_llm, solver_llm
        self.retrievers = _retrievers_of(kb)
        self.tools = self._tools(tools)
        self.instructions = [instructions] if isinstance(instructions, str) else list(instructions)
        self.budget = Budget.model_validate(dict(budget)) if isinstance(budget, Mapping) else budget
        self.language = language
        self.services = dict(services or {})

    def _tools(self, tools: Sequence[Tool | str] | None) -> dict[str, Tool]:
        chosen: list[Tool] = []
        for item in tools or ():
            obj = resolve("tool", item, self.registry) if isinstance(item, str) else item
            chosen.append(obj() if isinstance(obj, type) else obj)
        if self.strategy.uses_tools and self.retrievers and not any(t.name == DocSearchTool.name for t in chosen):
            chosen.insert(0, DocSearchTool())
        by_name: dict[str, Tool] = {}
        for tool in chosen:
            if tool.name in by_name:
                raise ConfigError(f"two tools are named {tool.name!r}; tool names must be unique")
            by_name[tool.name] = tool
        return by_name

    def _model(self, llm: LLM | str | None) -> LLM | None:
        if llm is None or isinstance(llm, LLM):
            return llm
        from reasonloop.llm.resolve import create_llm

        return create_llm(llm, registry=self.registry)

    @property
    def llm(self) -> LLM:
        """The reasoning model (the configured one is resolved on first use)."""
        if not isinstance(self._llm, LLM):
            if self._llm is None:
                from reasonloop.llm.resolve import create_llm

                self._llm = create_llm(registry=self.registry)
            else:
                self._llm = self._model(self._llm)
        assert isinstance(self._llm, LLM)
        return self._llm

    def context(
        self,
        history: Sequence[HistoryItem] | None = None,
        *,
        run_id: str | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
        depth: int = 0,
    ) -> RunContext:
        """A fresh :class:`RunContext` for one run.

        Raises:
            LLMNotConfigured: no model was given and none is configured.
        """
        self._planner_llm = self._model(self._planner_llm)
        self._solver_llm = self._model(self._solver_llm)
        return RunContext(
            llm=self.llm,
            planner_llm=self._planner_llm,  # type: ignore[arg-type]
            solver_llm=self._solver_llm,  # type: ignore[arg-type]
            tools=self.tools,
            retrievers=self.retrievers,
            history=_history(history),
            budget=self.budget,
            instructions=self.instructions,
            language=self.language,
            user_id=user_id,
            conversation_id=conversation_id,
            run_id=run_id or uuid.uuid4().hex,
            depth=depth,
            services=dict(self.services),
        )

    def stream(
        self,
        question: str,
        history: Sequence[HistoryItem] | None = None,
        *,
        run_id: str | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
    ) -> AsyncIterator[Event]:
        """The run's events, stamped: RunStarted first, then Answer or ErrorEvent last.

        Use as ``async for event in agent.stream(question): ...``; ``aclose()`` the iterator
        (or cancel the consuming task) to stop the run.
        """
        ctx = self.context(history, run_id=run_id, user_id=user_id, conversation_id=conversation_id)
        return self.events(question, ctx)

    async def events(self, question: str, ctx: RunContext) -> AsyncIterator[Event]:
        """Run the strategy in ``ctx`` and stamp its events (for runners that own the context)."""
        stamp = EventStamper(ctx.run_id)
        yield stamp(RunStarted(reasoning=self.reasoning_id, question=question, depth=ctx.depth))
        answered = False
        try:
            strategy = self.strategy(self.settings, ctx)
            agen = strategy.stream(question)
            try:
                async for event in agen:
                    for nested in ctx.drain() if ctx.pending else ():
                        yield stamp(nested)
                    yield stamp(event)
                    if isinstance(event, Answer):
                        answered = True
                        break
            finally:
                await agen.aclose()
            if not answered:
                raise RunError(f"strategy {self.reasoning_id!r} ended without an answer")
        except ReasonLoopError as exc:
            ctx.error = exc.to_dict()
            yield stamp(ErrorEvent(code=exc.code, message=exc.message, depth=ctx.depth))
        except Exception as exc:  # a defect in a plugin: report it as the run's error
            ctx.error = {"code": RunError.code, "message": f"{type(exc).__name__}: {exc}"}
            yield stamp(ErrorEvent(code=RunError.code, message=ctx.error["message"], depth=ctx.depth))

    async def run(
        self,
        question: str,
        history: Sequence[HistoryItem] | None = None,
        *,
        run_id: str | None = None,
        user_id: str | None = None,
        conversation_id: str | None = None,
    ) -> RunResult:
        """Run to the end and return the answer, citations, steps, usage and metadata."""
        ctx = self.context(history, run_id=run_id, user_id=user_id, conversation_id=conversation_id)
        started = time.time()
        answer: Answer | None = None
        partial: list[str] = []
        async for event in self.events(question, ctx):
            if isinstance(event, AnswerDelta):
                partial.append(event.text)
            elif isinstance(event, Answer):
                answer = event
        return RunResult(
            content=answer.text if answer else "".join(partial),
            citations=answer.citations if answer else [],
            steps=ctx.steps,
            usage=ctx.usage,
            stop_reason=answer.stop_reason if answer else "error",
            meta=RunMeta(run_id=ctx.run_id, reasoning=self.reasoning_id, started_at=started, ended_at=time.time()),
            error=ctx.error,
        )


async def ask(question: str, **agent_options: Any) -> RunResult:
    """One question, one answer: ``await ask("...", reasoning="qa", kb=kb)``."""
    return await Agent(**agent_options).run(question)
