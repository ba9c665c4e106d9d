"""What every route needs: the server's state and the caller (its key and rate, asked of the gate)."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from reasonloop.config import Settings
from reasonloop.errors import RequestInvalid
from reasonloop.registry import Registry
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import RunRecord, RunRequest
from reasonloop.server.gate import Caller, Gate

__all__ = ["ServerState", "principal", "server_state"]


@dataclass
class ServerState:
    """Everything the routes share, built by the app's lifespan."""

    settings: Settings
    gate: Gate
    """Who may call (:mod:`reasonloop.server.gate`), for every surface."""
    registry: Registry
    manager: RunManager | None = None
    metrics: Any = None
    kb: Any = None
    """A :class:`reasonloop.server.tenancy.KBProvider`: one knowledge base per tenant."""
    ready: bool = False
    extras: dict[str, Any] = field(default_factory=dict)
    new_outbox: Callable[..., Any] | None = None
    """Makes each WebSocket's outbox (the transport's, a :data:`~reasonloop.server.ws.frames.OutboxFactory`);
    set by the app."""
    mcp: Callable[[], Any] | None = None
    """Gives the client of the configured MCP servers (a
    :class:`~reasonloop.tools.mcp_client.MCPManager`, shared with the runs); None when none is
    configured."""
    models: Callable[[], Awaitable[dict[str, Any]]] | None = None
    """Describes the model runs use and the served ones a run may pick (``GET /v1/llm``); set by the
    app from its runner. None: the runner says nothing about its model."""
    read_agents: Callable[[], dict[str, Any]] = dict
    """Reads the declared agents (``[agents.*]`` and the ``agents_file``); set by the app."""
    feedback: Callable[[], Any] | None = None
    """Gives the store where judgements go to guide later runs (a
    :class:`~reasonloop.tools.feedback.FeedbackStore`: ``await store.add(tenant, conversation,
    rating, reason, run_id=...)``); set by the app. None: nowhere."""

    @functools.cached_property
    def agents(self) -> dict[str, Any]:
        """The declared agents, read once.

        Raises:
            AgentConfigError: the agents file is missing or invalid.
        """
        return self.read_agents()

    @property
    def runs(self) -> RunManager:
        assert self.manager is not None, "the server has not started"
        return self.manager

    def check_length(self, text: str, field: str, what: str = "question") -> None:
        """Refuse a question or search query over ``[server] max_question_chars``.

        Raises:
            RequestInvalid: it is longer (``field`` names it as the client sent it).
        """
        limit = self.settings.server.max_question_chars
        if len(text) > limit:
            raise RequestInvalid(
                f"{field}: the {what} has {len(text)} characters, over the limit of {limit} "
                "([server] max_question_chars)",
                field=field,
                limit=limit,
            )

    async def start(self, request: RunRequest, *, field: str = "question") -> RunRecord:
        """Start a run asked for by a client (every surface starts runs here).

        Raises:
            RequestInvalid: the question is over ``[server] max_question_chars`` (``field`` names it
                as the client sent it), or the run manager refused the request.
        """
        self.check_length(request.question, field)
        return await self.runs.start(request)


def server_state(request: Request) -> ServerState:
    return request.app.state.reasonloop


async def principal(request: Request) -> Caller:
    """The caller of a route: its key checked and one request taken from its budget (its site was
    checked for every request, :class:`~reasonloop.server.middleware.SiteGuard`).

    Raises:
        AuthError: keys are configured and the request presents none of them.
        RateLimited: the caller is over its budget.
    """
    gate = server_state(request).gate
    caller = gate.identify(request.scope)
    await gate.charge(caller)
    return caller
