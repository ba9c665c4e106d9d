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
traceback. Over HTTP each request is the tenant of its API key; over stdio, ``default``. How ``ask``
follows its run is :mod:`.follow`; how it asks its client about an approval, :mod:`.approvals`.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar
from typing import Annotated, Any, Literal

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, UnexpectedToolError
from mcp.server.mcpserver.exceptions import ToolError as SDKToolError
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from reasonloop import __version__
from reasonloop.errors import AuthError, DocumentNotFound, KBEmpty, ReasonLoopError, RequestInvalid, ToolNotFound
from reasonloop.kb.access import parse_readers
from reasonloop.runs.approvals import ApprovalAnswer, ApprovalView
from reasonloop.runs.models import RunRequest
from reasonloop.server.deps import ServerState
from reasonloop.server.errors import INTERNAL, invalid_arguments
from reasonloop.server.gate import ADMITTED, LOCAL, Caller, decider
from reasonloop.server.mcp.approvals import take_answer, waited_approval
from reasonloop.server.mcp.follow import AskResult, RunFailed, follow
from reasonloop.server.mcp.inputs import allowed_sources, search_filters
from reasonloop.telemetry import trace_headers

__all__ = ["DOCUMENT_URI", "build_mcp_server"]

DOCUMENT_URI = "reasonloop://documents/{document_id}"
"""The resource URI of a document."""

_caller: ContextVar[Caller | None] = ContextVar("reasonloop_mcp_caller", default=None)
"""Who sent the MCP request being handled (set by :class:`_Caller`)."""

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
    if isinstance(cause, ReasonLoopError | RunFailed):
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
            return again if again is not None else await follow(state, run_id, who, ctx, after)
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
        return await follow(state, record.run_id, who, ctx)

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
