"""The reasoning contract: a strategy turns a question into a stream of events.

A :class:`Reasoning` plugin is constructed per run with its validated settings and a
:class:`RunContext` (LLMs, tools, retrievers, history, budget, instructions), and
:meth:`Reasoning.stream` yields the events of :mod:`reasonloop.events` ending with exactly
one :class:`~reasonloop.events.Answer`. Strategies create events without ``run_id``/``seq``;
the runner (:class:`reasonloop.agent.Agent`) stamps them.

Example::

    class Echo(Reasoning):
        info = PluginInfo(id="echo", name="Echo", description="Repeats the question")

        async def stream(self, question):
            yield self.answer(question)
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasonloop.errors import ConfigError
from reasonloop.events import Answer, Citation, Event, Step, StopReason, Usage
from reasonloop.kb.base import Retriever
from reasonloop.llm.base import LLM, Message
from reasonloop.plugin_table import field_text
from reasonloop.registry import PluginInfo, Registry
from reasonloop.tools.base import RunScope, Tool, ToolContext

__all__ = [
    "Budget",
    "LoopSettings",
    "Reasoning",
    "ReasoningSettings",
    "RunContext",
]


class ReasoningSettings(BaseModel):
    """Settings every strategy has; subclasses add their own fields (the UI renders the schema)."""

    model_config = ConfigDict(extra="forbid")

    max_evidence_tokens: int = Field(
        default=1500,
        ge=50,
        **field_text(
            en=("Evidence tokens", "Most tokens of evidence (or of one tool result) shown to the model."),
            zh=("证据词元上限", "给模型看的证据（或单次工具结果）最多的词元数。"),
        ),
    )


class Budget(BaseModel):
    """The limits of one run. When one is hit, a last tool-less call answers."""

    model_config = ConfigDict(extra="forbid")

    max_rounds: int = Field(
        default=6,
        ge=1,
        **field_text(
            en=("Reasoning rounds", "Most model turns (each may call tools) before a last one must answer."),
            zh=("推理轮数上限", "最多的模型轮次（每轮可调用工具），用完后由最后一次调用作答。"),
        ),
    )
    max_tool_calls: int = Field(
        default=10,
        ge=0,
        **field_text(
            en=("Tool calls", "Most tool calls run; calls beyond it are not run and the model is told so."),
            zh=("工具调用上限", "最多执行的工具调用次数；超出的调用不执行，并告知模型。"),
        ),
    )
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        **field_text(
            en=("Token budget", "Prompt plus completion tokens over all model calls of the run; empty: no limit."),
            zh=("词元预算", "本次运行所有模型调用的提示与生成词元总数；留空表示不限。"),
        ),
    )
    timeout_s: float | None = Field(
        default=None,
        gt=0,
        **field_text(
            en=("Time limit (s)", "Seconds the whole run may take before it must answer; empty: no limit."),
            zh=("时间上限（秒）", "整个运行在必须作答前可用的秒数；留空表示不限。"),
        ),
    )


class LoopSettings(ReasoningSettings, Budget):
    """Settings of strategies that loop over tools: the budget plus the tool-call guard."""

    require_tool_call: bool = Field(
        default=False,
        **field_text(
            en=(
                "Require a tool call",
                "Refuse an answer given without any real tool call: the run ends with a guard error.",
            ),
            zh=("必须调用工具", "拒绝未经任何真实工具调用给出的回答：运行以守卫错误结束。"),
        ),
    )

    def budget(self) -> Budget:
        """The budget part of these settings (they are a :class:`Budget`; validated once, read-only here)."""
        return self


@dataclass
class RunContext:
    """Everything a strategy may use during one run.

    Attributes:
        llm: The model that reasons (and answers, unless ``solver_llm`` is set).
        planner_llm: Model for planning steps (ReWOO); defaults to ``llm``.
        solver_llm: Model for the final synthesis (ReWOO); defaults to ``llm``.
        tools: Tools by name.
        retrievers: Every knowledge source of the run (docsearch searches all of them).
        history: Earlier conversation turns, oldest first, without a system message.
        budget: A run-wide cap that overrides the strategy's own budget settings.
        instructions: User instructions appended to the built-in prompts.
        language: ``"en"``, ``"zh"``...; ``None`` follows the question's language.
        services: Extra resources handed to every tool as ``ToolContext.services``.
        scope: What the run shares with its tools (``ToolContext.scope``).
        steps: Actions taken so far (filled by the strategy; read by the runner).
        usage: Consumption so far (filled by the helpers; read by the runner).
        error: A structured error the run ended with (set by the guard).
    """

    llm: LLM
    planner_llm: LLM | None = None
    solver_llm: LLM | None = None
    tools: dict[str, Tool] = field(default_factory=dict)
    retrievers: list[Retriever] = field(default_factory=list)
    history: list[Message] = field(default_factory=list)
    budget: Budget | None = None
    instructions: list[str] = field(default_factory=list)
    language: str | None = None
    user_id: str | None = None
    conversation_id: str | None = None
    run_id: str = ""
    depth: int = 0
    services: dict[str, Any] = field(default_factory=dict)
    """Extra resources the caller shares with its tools by name (``Agent(services=...)``)."""
    registry: Registry | None = None
    """Where a strategy that runs another (``auto``) looks its id up (``None``: the process registry)."""
    scope: RunScope = field(default_factory=RunScope)
    """What the run shares with its tools, typed: retrievers, model, evidence, user, ..."""
    steps: list[Step] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    error: dict[str, Any] | None = None
    real_tool_calls: int = 0
    """Real tool calls made for this run, with those (and the searches) of the sub-agents it called:
    the evidence gathered, what ``require_tool_call`` counts. The one counter of them, kept by
    :func:`~reasonloop.reasoning.steps.toolexec.tally`."""
    pending: list[Event] = field(default_factory=list)
    """Nested events emitted by tools, waiting to be yielded into the run's stream."""
    _wake: asyncio.Event | None = field(default=None, repr=False)
    _wake_users: int = field(default=0, repr=False)
    """Tool rounds running concurrently on this context (ReWOO's steps) share one wake event."""

    def __post_init__(self) -> None:
        if not self.scope.retrievers:
            self.scope.retrievers = self.retrievers
        if self.scope.llm is None:
            self.scope.llm = self.llm

    async def emit(self, event: Event) -> None:
        """Queue a nested event (from a sub-agent tool) for the run's stream."""
        self.pending.append(event)
        if self._wake is not None:
            self._wake.set()

    def drain(self) -> list[Event]:
        """Take the queued nested events."""
        events, self.pending = self.pending, []
        return events

    def tool_context(self, call_id: str) -> ToolContext:
        return ToolContext(self.run_id, call_id, self.depth, self.emit, self.services, self.usage, self.scope)

    def searched(self) -> None:
        """Count a knowledge-base search the strategy made itself, without a tool round (qa's, a
        decompose sub-question's): in the run's usage as a search, not as a tool call."""
        self.usage.searches += 1


class Reasoning(ABC):
    """Base class of reasoning strategies (plugins of kind ``reasoning``).

    Args:
        settings: An instance of :attr:`Settings`, a mapping validated into one, or ``None``.
        ctx: The run's context.

    Raises:
        ConfigError: the settings do not validate; the message names the key.
    """

    info: ClassVar[PluginInfo]
    Settings: ClassVar[type[BaseModel]] = ReasoningSettings
    uses_tools: ClassVar[bool] = False
    """True when the strategy calls tools, so a runner gives it ``docsearch`` by default."""
    needs_instructions: ClassVar[bool] = True
    """True when the strategy prompts its model with instructions or a format (every built-in one
    does); with a base model, which only continues text, the agent runs the evidence answer
    instead (:mod:`reasonloop.agents.model_profile`)."""

    def __init__(self, settings: BaseModel | Mapping[str, Any] | None, ctx: RunContext) -> None:
        self.settings: Any = self.validate_settings(settings)
        self.ctx = ctx
        budget = getattr(self.settings, "max_evidence_tokens", None)
        if budget is not None and ctx.scope.max_evidence_tokens is None:
            ctx.scope.max_evidence_tokens = budget

    @classmethod
    def validate_settings(cls, settings: BaseModel | Mapping[str, Any] | None) -> BaseModel:
        """``settings`` as an instance of :attr:`Settings` (validated once, reused per run)."""
        if isinstance(settings, cls.Settings):
            return settings
        raw = settings.model_dump() if isinstance(settings, BaseModel) else dict(settings or {})
        try:
            return cls.Settings.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"invalid settings for reasoning {cls.info.id!r}: {problems}") from None

    @classmethod
    def settings_schema(cls) -> dict[str, Any]:
        """JSON schema of :attr:`Settings` (what a UI renders as the settings form)."""
        return cls.Settings.model_json_schema()

    @abstractmethod
    def stream(self, question: str) -> AsyncIterator[Event]:
        """Answer ``question``, yielding events; the last one is an :class:`Answer`."""

    def answer(self, text: str, citations: list[Citation] | None = None, stop_reason: StopReason = "final") -> Answer:
        """The closing event, with the run's usage so far."""
        return Answer(text=text, citations=citations or [], usage=self.ctx.usage.copy(), stop_reason=stop_reason)
