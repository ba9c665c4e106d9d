"""What every route needs: the server's state and the caller (its key and rate, asked of the gate)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from reasonloop.config import Settings
from reasonloop.errors import ConversationNotFound, RequestInvalid, RunNotFound
from reasonloop.kb.access import Reader
from reasonloop.registry import Registry
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import ConversationRecord, RunRecord, RunRequest
from reasonloop.server.gate import Caller, Gate

__all__ = ["ServerState", "principal", "sees", "server_state"]


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
        if request.conversation_id and request.reader is not None:  # its history is someone's answers
            try:
                conversation = await self.runs.records.conversation(request.conversation_id, request.tenant)
                await self.check_conversation(conversation, Reader.from_dict(request.reader))
            except ConversationNotFound:  # said as the run manager says a conversation it does not know
                cid = request.conversation_id
                raise RequestInvalid(f"no conversation {cid!r}", field="conversation_id") from None
        return await self.runs.start(request)

    async def check_run(self, run_id: str, who: Caller) -> None:
        """A run of the caller's: of its tenant, and asked by it when it may not read everything
        (another principal's run is not found, as one that does not exist: its answer, steps and
        citations come from documents that principal may read).

        Raises:
            RunNotFound: there is no such run for this caller.
        """
        if who.reader.everything:
            return  # the tenant's every run: what reads it checks the tenant
        record = await self.runs.get(run_id, who.tenant)
        if not sees(who.reader, record):
            raise RunNotFound(f"no run {run_id!r}", run_id=run_id)

    async def readable_documents(self, who: Caller) -> set[str] | None:
        """The ids of the documents the caller may read now (``None``: every one): what citations
        shown again are checked against (:mod:`reasonloop.server.withheld`)."""
        if who.reader.everything:
            return None
        kb = await self.kb.get(who.tenant, who.reader)
        documents = kb.documents()
        return {doc.id for doc in (await documents if inspect.isawaitable(documents) else documents)}

    async def check_conversation(self, conversation: ConversationRecord, reader: Reader) -> None:
        """Refuse a conversation whose first run another principal asked (see :meth:`check_run`).
        One that holds no run's answer yet is its tenant's, as before readers existed: nothing
        in it comes from a document.

        Raises:
            ConversationNotFound: the reader may not see it.
        """
        if reader.everything:
            return
        first = next((m.get("run_id") for m in conversation.messages if m.get("run_id")), None)
        if first is None:
            return
        try:
            record: RunRecord | None = await self.runs.get(first, conversation.tenant)
        except RunNotFound:  # its first run is gone: whose it was is unknown, so it is no one's
            record = None
        if record is None or not sees(reader, record):
            cid = conversation.conversation_id
            raise ConversationNotFound(f"no conversation {cid!r}", conversation_id=cid)


def sees(reader: Reader, record: RunRecord) -> bool:
    """Whether ``reader`` may see a run: every run when it reads everything, else its own. A run
    recorded before runs kept their reader is its tenant's, as it was then: seen by a key that
    names no principal and no group (the only kind of key there was)."""
    if reader.everything:
        return True
    if record.reader is None:
        return reader.principal is None and not reader.groups
    return Reader.from_dict(record.reader) == reader


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
