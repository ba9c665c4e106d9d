"""Tool calls a person approves: the policy that asks, and the gate every such call goes through.

A run's tools are wrapped by :func:`gated` with the run's :class:`Approver` and
:class:`ApprovalPolicies`. A call whose policy asks (``always``; ``once`` until one call of the
tool was confirmed in the run) does not run at once: the gate hands an :class:`ApprovalAsk` to the
approver, which makes it known (durably, for a served run) and calls back ``announce``; the gate
then emits an :class:`~reasonloop.events.ApprovalRequested` event, and waits for the
:class:`Decision`, during which the run's time budget stands still (``RunScope.pauses``). Then an
:class:`~reasonloop.events.ApprovalDecided` event, and:

* ``confirm``: the tool runs with the arguments the model asked for;
* ``modify``: it runs with the approver's arguments (checked against the tool's schema first);
* ``reject``: it does not run; the model reads the reason as the call's observation.

Where the answer comes from is the approver's business: the run store for served runs
(:mod:`reasonloop.runs.approvals`), the terminal for the CLI, a fixed answer for scripts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal
from weakref import WeakKeyDictionary

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from reasonloop import telemetry
from reasonloop.approval_answers import Announce, ApprovalAsk, Approver, Decision, check_answer
from reasonloop.config.tools import ApprovalPolicy, ApprovalSettings
from reasonloop.errors import ToolRejected
from reasonloop.events import ApprovalDecided, ApprovalRequested
from reasonloop.llm.base import ToolSpec
from reasonloop.tools.base import Tool, ToolContext, ToolOutput, error_output

__all__ = [
    "ApprovalAsk",
    "ApprovalPolicies",
    "Approver",
    "Decision",
    "FixedApprover",
    "GatedTool",
    "GatedTools",
    "check_answer",
    "gated",
]


class FixedApprover:
    """Answers every ask the same way, at once: ``--approve all`` (confirm) or ``never`` (reject)."""

    def __init__(self, decision: Literal["confirm", "reject"], via: str, reason: str = "") -> None:
        self.decision = decision
        self.via = via
        self.reason = reason
        self._n = 0

    async def decide(self, ask: ApprovalAsk, announce: Announce) -> Decision:
        self._n += 1
        ask.approval_id = ask.approval_id or f"apr_{self._n}"
        await announce(ask)
        return Decision(decision=self.decision, reason=self.reason, by={"via": self.via})


class ApprovalPolicies:
    """Which tools' calls a person approves, for the runs of one agent (or of none).

    A tool's policy is the first of: the agent's entry for the tool, the agent's entry for its MCP
    server (``mcp:SERVER``), ``[approvals] tools`` for the tool, then for its server, the server's
    own ``approval``, ``side_effects`` for a tool marked as having them, then ``default``.

    Args:
        settings: ``[approvals]``.
        agent: The agent's ``approvals`` table (``[agents.NAME] approvals``).
        servers: MCP server name -> its ``approval`` setting.
    """

    def __init__(
        self,
        settings: ApprovalSettings,
        agent: Mapping[str, ApprovalPolicy] | None = None,
        servers: Mapping[str, ApprovalPolicy | None] | None = None,
    ) -> None:
        self.settings = settings
        self.agent = dict(agent or {})
        self.servers = {name: policy for name, policy in (servers or {}).items() if policy is not None}

    def policy(self, tool: Tool) -> tuple[ApprovalPolicy, str]:
        """The tool's policy and where it comes from (what :class:`ApprovalRequested` says as why)."""
        name = tool.name
        server = _server_of(tool)
        tables = [(self.agent, "the agent's approvals"), (self.settings.tools, "[approvals] tools")]
        for table, where in tables:
            if name in table:
                return table[name], f"{where} ask for {name}"
            if server is not None and f"mcp:{server}" in table:
                return table[f"mcp:{server}"], f"{where} ask for the tools of MCP server {server}"
        if server is not None and server in self.servers:
            return self.servers[server], f"MCP server {server} asks for its tools"
        if self.settings.side_effects is not None and getattr(tool, "side_effects", False):
            return self.settings.side_effects, f"{name} has side effects"
        return self.settings.default, "[approvals] default"

    @property
    def asks_ever(self) -> bool:
        """Whether any tool might need approval under these policies."""
        named = [*self.agent.values(), *self.settings.tools.values(), *self.servers.values()]
        return any(p != "never" for p in [self.settings.default, self.settings.side_effects or "never", *named])


def _server_of(tool: Tool) -> str | None:
    connection = getattr(getattr(tool, "inner", tool), "connection", None)
    if connection is None and hasattr(tool, "inner"):  # under more than one wrapper
        return _server_of(tool.inner)
    return getattr(connection, "name", None)


class GatedTool(Tool):
    """``inner`` for one run: a call its policy asks about waits for the approver's decision.

    Everything but :meth:`invoke` is the wrapped tool's. It says it ``emits_events``: its events
    (the ask, the decision) must reach the run's readers while the call waits, not after it.
    """

    emits_events = True

    def __init__(self, inner: Tool, policy: ApprovalPolicy, why: str, run: GatedTools) -> None:
        self.inner = inner
        self.policy = policy
        self.why = why
        self.gates = run
        self.name = inner.name  # type: ignore[misc]
        self.description = inner.description  # type: ignore[misc]
        self.Params = inner.Params  # type: ignore[misc]
        self.timeout_s = inner.timeout_s
        self.max_output_chars = inner.max_output_chars
        self.side_effects = getattr(inner, "side_effects", False)

    def __getattr__(self, name: str) -> Any:  # what only some tools have (tool_calls_made)
        return getattr(self.inner, name)

    def spec(self) -> ToolSpec:
        return _spec_of(self.inner)

    def asks(self) -> bool:
        """Whether the next call waits for a person."""
        return self.policy == "always" or (self.policy == "once" and self.name not in self.gates.confirmed)

    async def invoke(self, arguments: Mapping[str, Any] | BaseModel, ctx: ToolContext) -> ToolOutput:
        if not self.asks():
            return await self.inner.invoke(arguments, ctx)
        asked = _plain(arguments)
        ask = ApprovalAsk(ctx.call_id, self.name, asked, self.why, _schema(self.inner))
        emit = ctx.emit

        async def announce(ask: ApprovalAsk) -> None:
            if emit is not None:
                await emit(
                    ApprovalRequested(
                        approval_id=ask.approval_id,
                        call_id=ask.call_id,
                        tool=ask.tool,
                        arguments=dict(asked),
                        reason=ask.reason,
                        schema=ask.schema,
                        expires_at=ask.expires_at,
                        depth=ctx.depth,
                    )
                )

        pauses = ctx.scope.pauses
        pauses.begin()
        try:
            decision = await self.gates.approver.decide(ask, announce)
        finally:
            pauses.end()
        ran = (
            None if decision.decision == "reject" else (decision.arguments if decision.decision == "modify" else asked)
        )
        decided = ApprovalDecided(
            approval_id=ask.approval_id,
            call_id=ask.call_id,
            tool=self.name,
            decision=decision.decision,
            arguments_asked=dict(asked),
            arguments_run=None if ran is None else dict(ran),
            reason=decision.reason,
            by=dict(decision.by),
            decided_at=decision.decided_at,
            depth=ctx.depth,
        )
        traced = telemetry.tracing
        if traced is not None:  # on the call's execute_tool span: the trace keeps the audit too
            traced.approval(decided)
        if emit is not None:
            await emit(decided)
        if ran is None:
            said = f": {decision.reason}" if decision.reason else ""
            return error_output(self.name, ToolRejected(f"the call was rejected by its approver{said}", tool=self.name))
        self.gates.confirmed.add(self.name)
        return await self.inner.invoke(ran, ctx)


def _plain(arguments: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
    if isinstance(arguments, BaseModel):
        return arguments.model_dump(mode="json")
    return dict(to_jsonable_python(dict(arguments or {}), serialize_unknown=True))


_SPECS: WeakKeyDictionary[Tool, ToolSpec] = WeakKeyDictionary()
"""Each wrapped tool's spec, built once: a JSON schema costs ~0.3 ms, and every run wraps its tools
anew (the strategies' own cache, ``reasoning.formats.prompts.tool_spec``, is keyed by the wrapper)."""


def _spec_of(tool: Tool) -> ToolSpec:
    spec = _SPECS.get(tool)
    if spec is None:
        spec = _SPECS[tool] = tool.spec()
    return spec


def _schema(tool: Tool) -> dict[str, Any]:
    try:
        return dict(_spec_of(tool).parameters)
    except Exception:  # a tool that cannot describe itself: no schema to check answers against
        return {}


class GatedTools(dict[str, Tool]):
    """A run's tools by name, each that its policy may ask about wrapped as it is put in (tools that
    join later, an MCP server's, included); ``under`` wraps each tool first (the step journal)."""

    def __init__(
        self,
        tools: Mapping[str, Tool],
        policies: ApprovalPolicies,
        approver: Approver,
        under: Callable[[Tool], Tool] | None = None,
    ) -> None:
        super().__init__()
        self.policies = policies
        self.approver = approver
        self.under = under
        self.confirmed: set[str] = set()
        """Tools a call of which was confirmed in this run (``once`` asks no more)."""
        self.update(tools)

    def _wrap(self, tool: Tool) -> Tool:
        if isinstance(tool, GatedTool):
            return tool
        if self.under is not None:
            tool = self.under(tool)
        policy, why = self.policies.policy(tool)
        return tool if policy == "never" else GatedTool(tool, policy, why, self)

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


def gated(tools: Mapping[str, Tool], policies: ApprovalPolicies, approver: Approver) -> dict[str, Tool]:
    """A run's tools with those its policies ask about going through ``approver``; tools put in
    later are wrapped as they join (under the step journal's wrapping, when ``tools`` has one)."""
    under = getattr(tools, "_wrap", None)
    return GatedTools(tools, policies, approver, under)
