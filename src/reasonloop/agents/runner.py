"""The runner of served runs: a :class:`~reasonloop.runs.models.RunRequest` answered by an :class:`~reasonloop.agents.agent.Agent`.

The tenant's knowledge base is opened (once) and given to the agent as the run's reader sees it
(the caller's key: :mod:`reasonloop.kb.access`), so a run only ever searches its own tenant's
documents, and among them only those its caller may read: every strategy, tool and sub-agent
of the run reads through that view. Requests are validated before a run is recorded: an
unknown strategy or invalid settings is a :class:`~reasonloop.errors.RequestInvalid` naming
the field (HTTP 422). Given the run's step journal, the runner puts the run's models and tools
under it (:mod:`reasonloop.runs.replay`), so that the run can resume in another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from typing import Any

from pydantic import ValidationError

from reasonloop.agents.agent import Agent
from reasonloop.agents.declared import declared_agents
from reasonloop.agents.resources import AgentResources
from reasonloop.agents.served_models import ServedModels
from reasonloop.config import Settings
from reasonloop.defaults import DEFAULT_REASONING
from reasonloop.errors import KBUnavailable, LLMNotConfigured, ModeInvalid, PluginNotFound, RequestInvalid
from reasonloop.events import Event, Usage
from reasonloop.kb.access import Reader, user_of
from reasonloop.llm.base import LLM
from reasonloop.reasoning.modes import check_choice, resolve_mode
from reasonloop.registry import Registry, resolve
from reasonloop.runs.models import RunRequest
from reasonloop.runs.replay import StepJournal
from reasonloop.runs.replay.context import journaled
from reasonloop.tools.approval import ApprovalPolicies, Approver, gated

__all__ = ["DEFAULT_REASONING", "AgentRunner"]


class AgentRunner:
    """Runs requests through the Agent API (a :data:`reasonloop.runs.Runner`).

    Args:
        settings: The server's settings (LLM, knowledge base).
        registry: Plugin registry for strategy and tool ids.
        kb: Gives each tenant's knowledge base as a reader sees it (``await kb.get(tenant, reader)``).
        llm: An LLM (or spec) overriding ``[llm]`` for every run.
        declared: Gives the declared agents when the caller already reads them (the server's
            state does, for its catalogs); unset, the runner reads them itself, once.
        resources: Feedback store and MCP clients shared with the runner's owner (the server);
            unset, the runner makes its own and closes them in :meth:`aclose`.
    """

    def __init__(
        self,
        settings: Settings,
        registry: Registry | None = None,
        kb: Any = None,
        llm: Any = None,
        declared: Callable[[], dict[str, Any]] | None = None,
        resources: AgentResources | None = None,
    ) -> None:
        self.settings = settings
        self.registry = registry
        self.kb = kb
        self.llm = llm
        self._llm_lock = asyncio.Lock()
        self._declared_by = declared
        self._declared: dict[str, Any] | None = None
        self._owns_resources = resources is None
        self.resources = resources or AgentResources()
        self._built: dict[tuple[str, str, Reader], Any] = {}
        """(agent, tenant, reader) -> the declared agent, built once: its model clients and tools
        serve every run of that reader (built per run, each run's clients would keep their
        connections open)."""
        self.served = ServedModels(settings, registry, enabled=llm is None)
        """The models served on this machine that a run may pick (``RunRequest.model``)."""

    async def _default_llm(self) -> Any:
        """The ``[llm]`` model of the server's settings, resolved once for every run.

        Resolving ``auto`` may probe Ollama over HTTP, so it runs once and off the event loop;
        left to each run's Agent it would block the loop per run and read ``./reasonloop.toml``
        instead of the settings the server was started with.
        """
        if self.llm is None:
            async with self._llm_lock:
                if self.llm is None:
                    from reasonloop.llm.resolve import create_llm

                    self.llm = await asyncio.to_thread(create_llm, None, self.settings, self.registry)
        return self.llm

    async def models(self) -> dict[str, Any]:
        """The model runs use and the served ones a run may pick (``GET /v1/llm``)."""
        try:
            llm, problem = await self._default_llm(), ""
        except LLMNotConfigured as exc:
            llm, problem = None, exc.message
        return await self.served.view(llm, problem)

    async def aclose(self) -> None:
        """Close the models of every run's agent: the ``[llm]`` model and the declared agents' own
        (each once; the server calls this when it stops), and the resources the runner made."""
        await self.served.aclose()
        built, self._built = list(self._built.values()), {}
        shared = [self.llm] if isinstance(self.llm, LLM) else []
        for agent in built:
            await agent.aclose(keep=shared)  # the runner's model is shared by them all: closed once, below
        for model in shared:
            await model.aclose()
        if self._owns_resources:
            await self.resources.aclose()

    def _agents(self) -> dict[str, Any]:
        """Every declared agent (``[agents.*]`` and the ``agents_file``), read once."""
        if self._declared_by is not None:
            return self._declared_by()
        if self._declared is None:
            self._declared = declared_agents(self.settings)
        return self._declared

    def _strategy(self, request: RunRequest) -> Any:
        return self._chosen(request)[0]

    def _chosen(self, request: RunRequest) -> tuple[Any, dict[str, Any]]:
        """The strategy class a request without an agent runs, and the settings it gives it (a
        mode's under the request's own).

        Raises:
            RequestInvalid: an unknown strategy or mode, both given, or a mode whose strategy is
                not installed (``field`` is ``reasoning`` or ``mode``).
        """
        if request.mode is None:
            return self._strategy_of(request.reasoning or DEFAULT_REASONING, "reasoning"), dict(request.settings)
        try:
            check_choice(request.reasoning, request.mode)
            strategy, mode_settings = resolve_mode(request.mode, self.registry)
        except ModeInvalid as exc:
            raise RequestInvalid(exc.message, field="mode") from exc
        return strategy, {**mode_settings, **request.settings}

    def _strategy_of(self, strategy_id: str, field: str) -> Any:
        try:
            return resolve("reasoning", strategy_id, self.registry)
        except PluginNotFound as exc:
            raise RequestInvalid(f"unknown reasoning {strategy_id!r}: {exc.message}", field=field) from exc

    def validate(self, request: RunRequest) -> None:
        """Reject an unknown strategy or invalid settings, naming the field.

        Raises:
            RequestInvalid: ``field`` is ``reasoning``, ``agent``, ``model`` or ``settings.<name>``.
        """
        if request.model is not None:
            if request.agent is not None:
                raise RequestInvalid("a declared agent answers with its own model: leave out model", field="model")
            self.served.check(request.model)
        given = request.settings
        if request.agent is not None and request.mode is not None:
            raise RequestInvalid("a declared agent answers with its own strategy: leave out mode", field="mode")
        if request.agent is not None:
            declared = self._agents().get(request.agent)
            if declared is None:
                known = ", ".join(sorted(self._agents())) or "none"
                raise RequestInvalid(f"no agent {request.agent!r} is configured (agents: {known})", field="agent")
            if not request.settings:
                return
            strategy = self._strategy_of(declared.reasoning, "agent")
            given = {**declared.settings, **request.settings}  # the request's settings over the declared ones
        else:
            strategy, given = self._chosen(request)
        settings_model = getattr(strategy, "Settings", None)
        if settings_model is None:
            return
        try:
            settings_model.model_validate(given)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise RequestInvalid(
                f"settings.{where}: {first['msg']} (got {first.get('input')!r})", field=f"settings.{where}"
            ) from None

    def _feedback(self) -> dict[str, Any]:
        """The feedback store whose recent judgements (of the run's tenant) guide the run."""
        return {
            "feedback": self.resources.feedback_store(self.settings),
            "feedback_recent": self.settings.tools.feedback.recent,
        }

    counts_usage = True
    """Takes the run manager's ``usage`` (see :data:`~reasonloop.runs.execution.Runner`)."""
    keeps_steps = True
    """Takes the run manager's ``journal``: the run's model and tool calls answer from it when it
    resumes (see :mod:`reasonloop.runs.replay`)."""
    asks_approval = True
    """Takes the run manager's ``approvals``: the run's tool calls that ``[approvals]`` (or the
    agent's ``approvals``) asks about wait for a person (see :mod:`reasonloop.tools.approval`)."""

    def __call__(
        self,
        request: RunRequest,
        *,
        usage: Usage | None = None,
        journal: StepJournal | None = None,
        approvals: Approver | None = None,
    ) -> AsyncIterator[Event]:
        return self._run(request, usage, journal, approvals)

    def policies(self, agent: str | None) -> ApprovalPolicies:
        """Which tools' calls a person approves in the runs of ``agent`` (None: no declared agent)."""
        declared = self._agents().get(agent) if agent is not None else None
        servers = {server.name: server.approval for server in self.settings.tools.mcp_servers}
        return ApprovalPolicies(self.settings.approvals, declared.approvals if declared is not None else None, servers)

    def resumable(self, request: RunRequest) -> bool:
        """Whether a run of ``request`` may resume in another process: its strategy does not say
        otherwise (``resumable = False`` on a strategy class: one whose work the journal of its
        model and tool calls does not capture)."""
        if request.agent is not None:
            declared = self._agents().get(request.agent)
            if declared is None:
                return False
            strategy = self._strategy_of(declared.reasoning, "agent")
        else:
            strategy = self._strategy(request)
        return bool(getattr(strategy, "resumable", True))

    def _agent(self, request: RunRequest, kb: Any, llm: Any = None) -> Agent:
        """The declared agent built (once, with ``llm`` for what names no model) for the request's
        tenant, with the request's settings over its own (a copy: the built agent keeps its own)."""
        key = (str(request.agent), request.tenant, Reader.from_dict(request.reader))
        built = self._built.get(key)
        if built is None:
            built = self._built[key] = Agent.from_config(
                str(request.agent), self.settings, kb=kb, llm=llm, registry=self.registry, resources=self.resources
            )
        if not request.settings and request.budget is None:
            return built
        agent = copy.copy(built)
        if request.settings:
            agent.settings = built.strategy.validate_settings({**built.settings.model_dump(), **request.settings})
        if request.budget is not None:
            agent.budget = request.budget
        return agent

    async def _run(
        self, request: RunRequest, usage: Usage | None, journal: StepJournal | None, approvals: Approver | None
    ) -> AsyncIterator[Event]:
        kb = None
        reader = Reader.from_dict(request.reader)
        if self.kb is not None:
            try:
                kb = await self.kb.get(request.tenant, reader)
            except KBUnavailable:
                kb = None
        if request.agent is not None:
            default_llm = None
            if (request.agent, request.tenant, reader) not in self._built:
                with contextlib.suppress(LLMNotConfigured):  # fine when every agent it reaches names its own llm
                    default_llm = await self._default_llm()
            agent = self._agent(request, kb, default_llm)
        else:
            strategy, settings = self._chosen(request)
            agent = Agent(
                reasoning=strategy,
                llm=await (self.served.get(request.model) if request.model else self._default_llm()),
                kb=kb,
                settings=settings,
                budget=request.budget,
                registry=self.registry,
                **self._feedback(),
            )
        ctx = agent.context(
            request.history,
            run_id=request.run_id,
            user_id=user_of(request.tenant, reader),
            conversation_id=request.conversation_id,
            sampling=request.sampling,
        )
        if usage is not None:
            ctx.usage = usage
        if journal is not None:
            journaled(ctx, journal)
        if approvals is not None:
            policies = self.policies(request.agent)
            if policies.asks_ever:
                ctx.tools = gated(ctx.tools, policies, approvals)
        events = agent.events(request.question, ctx, tenant=request.tenant, trace_parent=request.trace_context)
        async with aclosing(events):  # the run manager numbers them
            async for event in events:
                yield event
