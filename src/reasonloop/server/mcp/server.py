"""reasonloop as an MCP server, on the official ``mcp`` SDK: search, ask and the knowledge base as tools.

One :class:`~mcp.server.mcpserver.MCPServer` serves a :class:`~reasonloop.server.deps.ServerState`
(the same run manager and knowledge bases as the REST API), over stdio (``reasonloop mcp``) or
streamable HTTP (``/mcp`` on ``reasonloop serve``, see :mod:`reasonloop.server.mcp.endpoint`). Tools:

- ``search`` — hits with text, source, page, score and a citation id;
- ``ask`` — a run: the answer, its citations and a short trace; while it runs, each step is an MCP
  progress notification (the first names the run), and cancelling the request stops the run (it
  ends ``stopped``);
- ``answer_approval`` — confirm, modify or reject a tool call of a run waiting for approval; ``ask``
  also asks its client itself, by elicitation, when the client supports it (the ask is a progress
  line either way, naming the run and the approval);
- ``ingest`` (paths under ``[mcp] ingest_roots``, URLs when ``ingest_urls``; over HTTP only with
  ``ingest_over_http``), ``list_documents``, ``kb_stats``, ``delete_document`` (``allow_delete``).

Every document is a resource, ``reasonloop://documents/{document_id}``, read as text. A failure is
a tool result with ``isError`` whose text is our stable code, then the message
(``[kb.document_not_found] ...``, ``[request.invalid] question: the question is empty``), arguments
the input schema refuses included; the session goes on, and the server logs one line, not a
traceback. Over HTTP each request is the tenant of its API key; over stdio, ``default``. How
``ask`` asks its client about an approval is :mod:`.approvals`.
"""

from __future__ import annotations

import contextlib
import json
import logging
from contextvars import ContextVar
from typing import Annotated, Any, Literal

import anyio
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, UnexpectedToolError
from mcp.server.mcpserver.exceptions import ToolError as SDKToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from reasonloop import __version__
from reasonloop.errors import (
    AuthError,
    DocumentNotFound,
    KBEmpty,
    ReasonLoopError,
    RequestInvalid,
    RunError,
    ToolNotFound,
)
from reasonloop.events import (
    Answer,
    ApprovalDecided,
    ApprovalRequested,
    Citation,
    ErrorEvent,
    Event,
    Plan,
    Progress,
    Route,
    Searched,
    ToolCall,
    ToolResult,
)
from reasonloop.kb.access import parse_readers
from reasonloop.runs.approvals import ApprovalAnswer, ApprovalView
from reasonloop.runs.models import RunRequest
from reasonloop.server.deps import ServerState
from reasonloop.server.errors import INTERNAL, invalid_arguments
from reasonloop.server.gate import ADMITTED, LOCAL, Caller, decider
from reasonloop.server.mcp.approvals import can_elicit, elicit_approval, take_answer, waited_approval
from reasonloop.server.mcp.inputs import allowed_sources, search_filters
from reasonloop.telemetry import trace_headers

__all__ = ["DOCUMENT_URI", "build_mcp_server"]

DOCUMENT_URI = "reasonloop://documents/{document_id}"
"""The resource URI of a document."""

_caller: ContextVar[Caller | None] = ContextVar("reasonloop_mcp_caller", default=None)
"""Who sent the MCP request being handled (set by :class:`_Caller`)."""

_TRACE_LINES = 20
"""Steps kept in ``ask``'s trace summary (the whole trace is at ``/v1/runs/{id}``)."""

log = logging.getLogger(__name__)

_NOT_BLANK = {"minLength": 1, "pattern": r"\S"}
"""Published in a text argument's schema; a blank one is refused in our words (``[request.invalid]``)."""


class Hit(BaseModel):
    citation_id: int = Field(description="Number to cite this hit by, as [1], [2]...")
    text: str
    source: str = Field(description="Path or URL of the document")
    title: str = ""
    page: int | None = None
    score: float
    document_id: str
    chunk_id: str


class SearchResult(BaseModel):
    hits: list[Hit]


class AskResult(BaseModel):
    answer: str
    citations: list[Citation]
    run_id: str = Field(description="The run; its whole trace is at /v1/runs/{run_id} of the HTTP API")
    stop_reason: str
    trace: list[str] = Field(description="What the run did, one line per step (the first steps)")


class Document(BaseModel):
    id: str
    source: str
    title: str
    chunks: int
    uri: str = Field(description="The document as an MCP resource")


class DocumentList(BaseModel):
    documents: list[Document]


class Approvals(BaseModel):
    approvals: list[ApprovalView]


class _Caller:
    """Server middleware: each request runs as the caller the gate admitted its HTTP request as
    (:class:`~reasonloop.server.mcp.endpoint.MCPEndpoint`); over stdio, which has no HTTP request, as
    the user who started the command, in the ``default`` tenant."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        request = ctx.request
        if request is None:
            who = LOCAL
        else:
            who = getattr(request, "scope", {}).get(ADMITTED)
            if not isinstance(who, Caller):  # not through the endpoint, which admits every request
                raise AuthError("this MCP request was not admitted by the server's gate")
        token = _caller.set(who)
        try:
            return await call_next(ctx)
        finally:
            _caller.reset(token)


def _who() -> Caller:
    return _caller.get() or LOCAL


class _RunFailed(Exception):
    """A run ``ask`` followed ended with an error event: reported with the event's own code."""

    def __init__(self, event: ErrorEvent) -> None:
        super().__init__(f"[{event.code}] {event.message}")


class _Server(MCPServer):
    """The SDK's server, reporting every failed tool call in our words: an ``isError`` result whose
    text starts with our code, instead of the SDK's ``Error executing tool NAME: ...``."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None) -> Any:
        names = sorted(tool.name for tool in await self.list_tools())
        if name not in names:
            return _error_result(name, str(ToolNotFound(f"no tool {name!r} (tools: {', '.join(names)})")))
        try:
            return await super().call_tool(name, arguments, context)
        except MCPError:
            raise  # a protocol error, answered as one
        except SDKToolError as exc:
            return _failure(name, exc)


def _failure(name: str, exc: SDKToolError) -> CallToolResult:
    """The result of a failed call of tool ``name``: ``[code] message``, logged in one line (with a
    traceback only for a failure nobody foresaw)."""
    cause = exc.__cause__
    while isinstance(cause, SDKToolError) and cause.__cause__ is not None:  # a nested tool's wrapper
        cause = cause.__cause__
    if isinstance(cause, ReasonLoopError | _RunFailed):
        text = str(cause)
    elif isinstance(cause, ValidationError) and not isinstance(exc, UnexpectedToolError):
        text = str(invalid_arguments(cause))  # arguments the input schema refuses
    elif isinstance(exc, UnexpectedToolError):
        log.error("MCP tool %r failed", name, exc_info=cause)
        text = f"[{INTERNAL}] the tool {name} failed unexpectedly; the server's log has the details"
    else:
        text = f"[tool.error] {exc}"
    return _error_result(name, text)


def _error_result(name: str, text: str) -> CallToolResult:
    log.info("MCP tool %r refused: %s", name, text.partition(" ")[0])
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _summary(event: Event) -> str | None:
    """A trace line of the event, read from its fields (a plan's text is not parsed)."""
    if isinstance(event, Progress):
        return event.message
    if isinstance(event, Plan):
        return ("plan: " + "; ".join(step.line() for step in event.steps))[:300]
    if isinstance(event, ToolCall):
        return f"{event.tool}({json.dumps(event.input, ensure_ascii=False)[:200]})"
    if isinstance(event, ToolResult):
        return f"{event.tool}: {'error' if event.error else 'ok'}"
    if isinstance(event, Searched):
        return f"search({json.dumps(event.query, ensure_ascii=False)[:200]}): {event.hits} found"
    if isinstance(event, ApprovalDecided):
        return f"approval {event.approval_id}: {event.decision} (via {event.by.get('via', '?')})"
    if isinstance(event, ApprovalRequested):
        return (
            f"approval {event.approval_id} of run {event.run_id} needed: {event.tool}"
            f"({json.dumps(event.arguments, ensure_ascii=False)[:200]}); answer with answer_approval"
        )
    if isinstance(event, Route):
        return f"route: {event.route}{f' ({event.strategy})' if event.strategy else ''}: {event.reason[:200]}"
    return None


def build_mcp_server(state: ServerState, *, transport: Literal["stdio", "http"]) -> MCPServer:
    """The MCP server over ``state`` (its run manager and knowledge bases must be open when called)."""
    settings = state.settings.mcp
    server = _Server(
        "reasonloop",
        version=__version__,
        instructions=(
            "Answers questions over the user's own documents. Use `search` to find passages and "
            "`ask` for an answer with citations."
        ),
        log_level="WARNING",
        middleware=[_Caller()],
    )

    async def tenant_kb() -> Any:
        return await state.kb.get(_who().tenant, _who().reader)

    @server.tool()
    async def search(
        query: Annotated[str, Field(json_schema_extra=_NOT_BLANK, description="What to look for, in any language")],
        top_k: Annotated[int, Field(ge=1, le=50, description="How many hits")] = 5,
        mode: Annotated[
            Literal["hybrid", "dense", "lexical"],
            Field(description="hybrid: meaning and words; dense: meaning only; lexical: words only (BM25)"),
        ] = "hybrid",
        filters: Annotated[
            dict[str, Any] | None,
            Field(
                description=(
                    'Metadata conditions, all of which must hold: {"source": "docs/a.md"} (equal), '
                    '{"page": {"gte": 3, "lte": 5}}, {"tags": {"contains": "x"}}, {"page": {"in": [1, 2]}}'
                )
            ),
        ] = None,
    ) -> SearchResult:
        """Search the user's documents; returns the best passages with their source, page and score."""
        if not query.strip():
            raise RequestInvalid("query: the query is empty", field="query")
        state.check_length(query, "query", "query")
        conditions = search_filters(filters)
        kb = await tenant_kb()
        if (await kb.stats()).documents == 0:
            raise KBEmpty("the knowledge base has no documents yet: ingest some first")
        hits = await kb.search(query, top_k, conditions, mode)
        return SearchResult(
            hits=[
                Hit(
                    citation_id=n,
                    text=h.text,
                    source=h.source,
                    title=h.title,
                    page=h.metadata.get("page"),
                    score=h.score,
                    document_id=h.document_id,
                    chunk_id=h.chunk_id,
                )
                for n, h in enumerate(hits, 1)
            ]
        )

    @server.tool()
    async def ask(
        question: Annotated[str, Field(json_schema_extra=_NOT_BLANK, description="The question, in any language")],
        ctx: Context,
        reasoning: Annotated[
            str | None,
            Field(description="Strategy: qa, decompose, react, toolcall, rewoo, ircot or auto (default: the server's)"),
        ] = None,
        agent: Annotated[str | None, Field(description="A configured agent to answer instead")] = None,
        settings: Annotated[dict[str, Any] | None, Field(description="The strategy's settings")] = None,
        mode: Annotated[
            str | None,
            Field(
                description="Thinking mode instead of a strategy: fast, balanced, deep, research or auto "
                "(auto picks no search, one search, multi-hop or research per question)"
            ),
        ] = None,
        budget: Annotated[
            dict[str, Any] | None,
            Field(description="The run's limits: max_tokens, timeout_s, max_rounds, max_tool_calls"),
        ] = None,
    ) -> AskResult | InputRequiredResult:
        """Answer a question from the user's documents, with citations; progress is reported while it runs."""
        who = _who()
        waited = waited_approval(ctx.request_state)
        if waited is not None:  # this call asked its client about an approval, and the client answered
            run_id, asked, after = waited
            again = await take_answer(state, run_id, who, asked, ctx.input_responses)
            return again if again is not None else await _follow(state, run_id, who, ctx, after)
        try:
            request = RunRequest(
                question=question,
                reasoning=reasoning,
                mode=mode,
                budget=budget,
                agent=agent,
                settings=settings or {},
                **who.run_fields(),
                trace_context=trace_headers(ctx.headers),
            )
        except ValidationError as exc:  # a blank question, a budget out of range
            raise invalid_arguments(exc) from exc
        record = await state.start(request)
        return await _follow(state, record.run_id, who, ctx)

    @server.tool()
    async def answer_approval(
        run_id: Annotated[str, Field(min_length=1, description="The run (named by ask's progress)")],
        approval_id: Annotated[str, Field(min_length=1, description="The approval (named by ask's progress)")],
        decision: Annotated[
            Literal["confirm", "modify", "reject"],
            Field(description="confirm: run as asked; modify: run with `arguments`; reject: do not run"),
        ],
        arguments: Annotated[
            dict[str, Any] | None, Field(description="With modify: the arguments (they must fit the tool's schema)")
        ] = None,
        reason: Annotated[str, Field(max_length=4000, description="Why (a rejection's is what the model reads)")] = "",
    ) -> Approvals:
        """Answer a tool call of a run that waits for approval; returns the run's approvals."""
        who = _who()
        answer = ApprovalAnswer(decision=decision, arguments=arguments, reason=reason)
        await state.runs.answer_approval(run_id, approval_id, answer.decision_by(decider(who, "mcp")), who.tenant)
        return Approvals(approvals=await state.runs.approvals_of(run_id, who.tenant))

    if transport == "stdio" or settings.ingest_over_http:

        @server.tool()
        async def ingest(
            paths_or_urls: Annotated[
                list[str], Field(min_length=1, description="Files or folders (under [mcp] ingest_roots), or URLs")
            ],
            readers: Annotated[
                list[str] | None,
                Field(description="Who may read them: users ('alice') and groups ('group:finance'); unset: everyone"),
            ] = None,
        ) -> dict[str, Any]:
            """Add documents to the knowledge base (unchanged ones cost nothing); reports what was added or failed."""
            canonical = None if readers is None else parse_readers(readers)
            kb_root = state.settings.kb.path  # every tenant's index and uploads: never a source
            sources: list[str] = []
            for source in paths_or_urls:
                sources += allowed_sources(source, settings.ingest_roots, settings.ingest_urls, kb_root)
            report = await (await tenant_kb()).ingest(sources, readers=canonical)
            return report.model_dump(mode="json")

    @server.tool()
    async def list_documents() -> DocumentList:
        """The documents in the knowledge base, each with its resource URI."""
        rows = await (await tenant_kb()).documents()
        return DocumentList(
            documents=[
                Document(
                    id=r.id,
                    source=r.source,
                    title=r.title,
                    chunks=r.chunks,
                    uri=DOCUMENT_URI.format(document_id=r.id),
                )
                for r in rows
            ]
        )

    @server.tool()
    async def kb_stats() -> dict[str, Any]:
        """Size of the knowledge base: documents, chunks, bytes, chunks per source, embedding model."""
        return (await (await tenant_kb()).stats()).model_dump(mode="json")

    if settings.allow_delete:

        @server.tool()
        async def delete_document(
            document: Annotated[str, Field(min_length=1, description="Document id or source")],
        ) -> dict[str, list[str]]:
            """Remove a document (by id or source) from the knowledge base."""
            try:
                removed = await (await tenant_kb()).delete(document)
            except ReasonLoopError as exc:
                raise DocumentNotFound(exc.message, document=document) from exc
            if not removed:
                raise DocumentNotFound(f"no document {document!r}", document=document)
            return {"deleted": removed}

    @server.resource(DOCUMENT_URI, mime_type="text/plain", description="A document of the knowledge base, as text")
    async def document_text(document_id: str) -> str:
        kb = await tenant_kb()
        found = await kb.text(document_id)
        if found is None:
            raise ResourceNotFoundError(f"[kb.document_not_found] no document {document_id!r}")
        return found[1]

    return server


async def _follow(
    state: ServerState, run_id: str, who: Caller, ctx: Context, after: int = 0
) -> AskResult | InputRequiredResult:
    """Follow a run to its end (from its event ``after``), reporting its steps as progress; a
    cancelled request stops it. A tool call waiting for approval is asked of the client when it
    can answer elicitations: at once (a session that takes server requests), or by returning an
    ``InputRequiredResult`` whose answer comes with the client's retry of the call (the run waits
    meanwhile)."""
    tenant = who.tenant
    trace: list[str] = []
    step = 0
    answer: Answer | None = None
    try:
        await ctx.report_progress(0, None, f"run {run_id} started" if not after else f"run {run_id} goes on")
        feed = await state.runs.read(run_id, after, tenant)
        async for event in feed.events():
            if event.depth == 0 and isinstance(event, Answer):
                answer = event
            elif event.depth == 0 and isinstance(event, ErrorEvent):
                raise _RunFailed(event)
            elif (line := _summary(event)) is not None:
                step += 1
                if len(trace) < _TRACE_LINES:
                    trace.append(line)
                await ctx.report_progress(step, None, line)
                if isinstance(event, ApprovalRequested) and can_elicit(ctx):
                    needed = await elicit_approval(state, run_id, who, event, ctx)
                    if needed is not None:
                        answer = None
                        return needed
    except BaseException:
        if answer is None:  # the request was cancelled (or its session ended): the run stops too
            with anyio.CancelScope(shield=True):
                await _stop(state, run_id, tenant)
        raise
    if answer is None:
        raise RunError(f"run {run_id} ended without an answer", run_id=run_id)
    return AskResult(
        answer=answer.text, citations=answer.citations, run_id=run_id, stop_reason=answer.stop_reason, trace=trace
    )


async def _stop(state: ServerState, run_id: str, tenant: str) -> None:
    with contextlib.suppress(ReasonLoopError):  # it ended meanwhile
        await state.runs.stop(run_id, tenant)
