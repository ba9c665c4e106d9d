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

Agents compose: an agent given to another in ``tools`` (or declared with ``agent:NAME`` in
``[agents.*]``, see :meth:`Agent.from_config`) is offered as a tool; its events arrive in
the parent's stream with ``depth`` > 0, and only the run's own (``depth`` equal to the run's)
``Answer`` and ``AnswerDelta`` events make its answer.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from reasonloop.agents.agent_runs import AgentRuns, HistoryItem
from reasonloop.agents.builder import AgentBuilder
from reasonloop.agents.model_profile import StrategyPlan
from reasonloop.agents.resources import AgentResources
from reasonloop.agents.toolbox import (
    ToolSource,
    knowledge_sources,
    load_sources,
    run_scope,
    sort_tools,
    stats_sources,
    toolbox,
)
from reasonloop.defaults import DEFAULT_REASONING
from reasonloop.events import RunResult
from reasonloop.llm.base import LLM, Message
from reasonloop.llm.sampling import Sampling, with_sampling
from reasonloop.reasoning.base import Budget, Reasoning, RunContext
from reasonloop.reasoning.modes import check_choice, resolve_mode
from reasonloop.registry import Registry, resolve
from reasonloop.tools.agent_tool import AgentTool, agent_tools
from reasonloop.tools.approval import ApprovalPolicies, Approver, gated
from reasonloop.tools.base import Tool
from reasonloop.tools.feedback import FeedbackStore

__all__ = ["Agent", "ToolSource", "ask"]


def _history(items: Sequence[HistoryItem] | None) -> list[Message]:
    out = []
    for item in items or ():
        message = item if isinstance(item, Message) else Message.from_dict(item)
        if message.role != "system":
            out.append(message)
    return out


class Agent(AgentRuns):
    """Answers questions with one strategy over a set of LLMs, tools and knowledge sources.

    Args:
        reasoning: Strategy id (``qa``, ``decompose``, ``react``, ``toolcall``, ``rewoo``, ``ircot`` or a
            plugin's) or a :class:`Reasoning` subclass; by default
            :data:`~reasonloop.defaults.DEFAULT_REASONING` (``qa``), as on every other surface.
            ``qa`` calls no tools: give a tool-using strategy (``react``, ``toolcall``, ``rewoo``)
            with ``tools``.
        llm: An LLM, a ``provider:model`` spec, or ``None`` for the configured one (resolved
            on first use).
        kb: A knowledge base (anything with ``retriever()``), a retriever, or a list of them.
        tools: Tools, tool ids, other agents (offered as tools: ``run_agent`` for a single
            one, ``agent_<name>`` for several) or :class:`ToolSource` objects. ``None`` gives
            tool-using strategies ``docsearch`` when there is a knowledge base; ``docsearch``
            is also added to an explicit list then.
        settings: The strategy's settings (validated now).
        instructions: User instructions appended to the built-in prompts.
        planner_llm: Model for planning (ReWOO); defaults to ``llm``.
        solver_llm: Model for the final synthesis (ReWOO); defaults to ``llm``.
        budget: A cap overriding the strategy's budget settings.
        language: Answer language; ``None`` follows each question.
        services: Extra shared resources handed to tools.
        registry: Where ids are looked up (default: the process registry).
        name: The agent's name (required to be offered to another agent as a tool).
        description: What the agent is for (a parent's model reads it as the tool description).
        feedback: A store of judgements: the ``feedback`` tool writes to it, and its recent
            guidance for the run's user and conversation is added to the instructions.
        feedback_recent: How many recent judgements shape that guidance.
        mode: A thinking mode (``fast``, ``balanced``, ``deep``, ``research``, ``auto``) instead of
            ``reasoning``: the strategy and settings of its row in
            :data:`~reasonloop.plugin_table.MODES`, with ``settings`` over the mode's.

    Raises:
        PluginNotFound: an unknown strategy or tool id.
        ModeInvalid: an unknown mode, a mode given with ``reasoning``, or a mode whose strategy is
            not installed.
        ConfigError: invalid settings, a bad ``kb``, or two tools with one name.
    """

    def __init__(
        self,
        reasoning: str | type[Reasoning] | None = None,
        llm: LLM | str | None = None,
        kb: Any = None,
        tools: Sequence[Tool | str | Agent | ToolSource] | None = None,
        settings: Mapping[str, Any] | BaseModel | None = None,
        instructions: Sequence[str] | str = (),
        *,
        planner_llm: LLM | str | None = None,
        solver_llm: LLM | str | None = None,
        budget: Budget | Mapping[str, Any] | None = None,
        language: str | None = None,
        services: Mapping[str, Any] | None = None,
        registry: Registry | None = None,
        name: str | None = None,
        description: str = "",
        feedback: FeedbackStore | None = None,
        feedback_recent: int = 5,
        mode: str | None = None,
    ) -> None:
        self.registry = registry
        self.name = name
        self.description = description
        self.feedback = feedback
        self.feedback_recent = feedback_recent
        self._sources: list[ToolSource] = []
        self._owned: AgentResources | None = None
        """Resources this agent made for itself (in :meth:`from_config`), closed by :meth:`aclose`."""
        check_choice(reasoning, mode)
        self.mode = mode
        if mode is not None:
            self.strategy, mode_settings = resolve_mode(mode, registry)
            given = settings.model_dump() if isinstance(settings, BaseModel) else dict(settings or {})
            settings = {**mode_settings, **given}  # the caller's settings over the mode's
        else:
            reasoning = DEFAULT_REASONING if reasoning is None else reasoning
            self.strategy = resolve("reasoning", reasoning, registry) if isinstance(reasoning, str) else reasoning
        self.reasoning_id = self.strategy.info.id
        self.settings = self.strategy.validate_settings(settings)
        self._plans: dict[tuple[Any, ...], StrategyPlan] = {}
        self._llm, self._planner_llm, self._solver_llm = llm, planner_llm, solver_llm
        self.retrievers = knowledge_sources(kb)
        self.tools = self._tools(tools)
        self.instructions = [instructions] if isinstance(instructions, str) else list(instructions)
        self.budget = Budget.model_validate(dict(budget)) if isinstance(budget, Mapping) else budget
        self.language = language
        self.services = dict(services or {})
        self.approvals: tuple[ApprovalPolicies, Approver] | None = None
        """Who approves the tool calls its policies ask about, in this agent's own runs (see
        :meth:`approve_with`); a served run's are the run manager's."""
        stats = stats_sources(kb)
        self._stats: Any = (stats if len(stats) > 1 else stats[0]) if stats else None
        """What ``kb_stats`` reports on."""

    @classmethod
    def from_config(
        cls,
        name: str,
        settings: Any = None,
        *,
        kb: Any = None,
        llm: LLM | None = None,
        registry: Registry | None = None,
        resources: AgentResources | None = None,
    ) -> Agent:
        """The agent declared as ``[agents.NAME]`` (in ``reasonloop.toml`` or its ``agents_file``).

        Its tools are built now: tool ids, every tool of ``mcp:SERVER`` (discovered on the
        first run), and ``agent:OTHER`` sub-agents.

        Args:
            name: The declared agent.
            settings: :class:`~reasonloop.config.Settings` (default: loaded from the working directory).
            kb: Knowledge base for agents that search one (``kb = true``, the default).
            llm: Model for declared agents that name none (default: the ``[llm]`` model).
            registry: Where ids are looked up (default: one built from ``[plugins]``).
            resources: Feedback store and MCP clients shared with the other agents of their owner;
                without them the agent makes its own, which :meth:`aclose` closes.

        Raises:
            AgentConfigError: unknown agent, tool, strategy or MCP server, a sub-agent cycle or
                invalid settings; the message names the agent (``agent.config_invalid``).
        """
        from reasonloop.config import load_settings

        owned = AgentResources() if resources is None else None
        builder = AgentBuilder(settings or load_settings(), cls, resources or owned, kb=kb, llm=llm, registry=registry)
        agent: Agent = builder.build(name)
        agent._owned = owned
        return agent

    @property
    def label(self) -> str:
        """The name of the agent on a stack of agents (its ``name``, else its strategy id)."""
        return self.name or self.reasoning_id

    def _tools(self, tools: Sequence[Tool | str | Agent | ToolSource] | None) -> dict[str, Tool]:
        chosen, agents, sources = sort_tools(tools, self.registry, lambda item: isinstance(item, Agent))
        self._sources.extend(sources)
        return toolbox(chosen, agent_tools(agents), docsearch=self.strategy.uses_tools and bool(self.retrievers))

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
        sampling: Sampling | None = None,
    ) -> RunContext:
        """A fresh :class:`RunContext` for one run.

        Args:
            sampling: The run's own ``max_tokens`` / ``temperature`` for every model call of
                its strategy, over the models' configured ones.

        Raises:
            LLMNotConfigured: no model was given and none is configured.
        """
        self._planner_llm = self._model(self._planner_llm)
        self._solver_llm = self._model(self._solver_llm)
        planner, solver = self._planner_llm, self._solver_llm
        return RunContext(
            llm=with_sampling(self.llm, sampling),
            planner_llm=None if planner is None else with_sampling(planner, sampling),  # type: ignore[arg-type]
            solver_llm=None if solver is None else with_sampling(solver, sampling),  # type: ignore[arg-type]
            tools=self.tools if self.approvals is None or depth else gated(self.tools, *self.approvals),
            retrievers=self.retrievers,
            history=_history(history),
            budget=self.budget,
            instructions=list(self.instructions),
            language=self.language,
            user_id=user_id,
            conversation_id=conversation_id,
            run_id=run_id or secrets.token_hex(16),
            depth=depth,
            services=dict(self.services),
            registry=self.registry,
            scope=run_scope(self.services, self.label, self._stats, self.feedback, user_id, conversation_id),
        )

    def approve_with(self, approver: Approver, policies: ApprovalPolicies) -> None:
        """Have ``approver`` decide the tool calls of this agent's runs that ``policies`` ask about
        (the CLI's terminal prompt, ``--approve``; any :class:`~reasonloop.tools.approval.Approver`)."""
        self.approvals = (policies, approver)

    def models(self) -> list[LLM]:
        """The models this agent has resolved so far (reasoning, planner, solver), each once."""
        found: list[LLM] = []
        for model in (self._llm, self._planner_llm, self._solver_llm):
            if isinstance(model, LLM) and all(m is not model for m in found):
                found.append(model)
        return found

    async def aclose(self, *, keep: Sequence[LLM] = ()) -> None:
        """Close the models of this agent and of every sub-agent below it (each once), but those in
        ``keep`` (shared with their owner), and the resources the agent made for itself."""
        seen: set[int] = set()
        models: list[LLM] = []
        stack: list[Agent] = [self]
        while stack:
            current = stack.pop()
            if id(current) in seen:
                continue
            seen.add(id(current))
            for model in current.models():
                if all(m is not model for m in (*models, *keep)):
                    models.append(model)
            stack.extend(t.agent for t in current.tools.values() if isinstance(t, AgentTool))  # type: ignore[misc]
        for model in models:
            await model.aclose()
        if self._owned is not None:
            owned, self._owned = self._owned, None
            await owned.aclose()

    async def prepare(self) -> list[str]:
        """Load the tools of :class:`ToolSource` objects (MCP servers) that are not loaded yet.

        Runs do this on their own; call it to pay the start-up cost early. A source that
        fails is retried by the next run.

        Returns:
            Problems to report (a server that did not start, a tool name already taken).
        """
        pending, self._sources = self._sources, []
        notes, self._sources = await load_sources(pending, self.tools)
        return notes


async def ask(question: str, **agent_options: Any) -> RunResult:
    """One question, one answer: ``await ask("...", reasoning="qa", kb=kb)``."""
    return await Agent(**agent_options).run(question)
