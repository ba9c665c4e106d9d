"""The FastAPI application: REST, SSE, WebSocket and the OpenAI-compatible endpoint.

Example::

    app = create_app(load_settings())            # runs answered by the Agent API
    app = create_app(settings, runner=my_runner)  # any (RunRequest) -> AsyncIterator[Event]

The lifespan opens the run store (a Redis store that cannot be reached fails start-up with
``run.store_unavailable`` and the URL), marks runs orphaned by a dead process ``interrupted``,
and starts the run manager; shutdown interrupts runs still executing, keeping their partial
answers.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from reasonloop import __version__, telemetry
from reasonloop.agents import AgentResources, AgentRunner, declared_agents
from reasonloop.config import Settings, load_settings
from reasonloop.registry import Registry
from reasonloop.runs.manager import RunManager, Runner
from reasonloop.runs.stores import RunStore, open_store
from reasonloop.server.auth import auth_warning
from reasonloop.server.deps import ServerState
from reasonloop.server.errors import install_error_handlers
from reasonloop.server.gate import Gate
from reasonloop.server.middleware import SiteGuard, UploadSizeGuard
from reasonloop.server.routes import catalog, conversations, documents, health, kb, openai, pages, runs
from reasonloop.server.tenancy import KBProvider
from reasonloop.server.transport.outbox import Outbox
from reasonloop.server.transport.unwrapped import UnwrappedSockets
from reasonloop.server.web.api_docs import install_docs
from reasonloop.server.web.ui import install_webui
from reasonloop.server.ws import session

__all__ = ["ReasonloopAPI", "create_app"]

log = logging.getLogger("reasonloop.server")


class ReasonloopAPI(FastAPI):
    """The FastAPI app, with ``/v1/ws`` sockets served before its middleware stack
    (:class:`~reasonloop.server.transport.unwrapped.UnwrappedSockets`): none of that middleware
    applies to a socket, and each layer would stay on the stack for the socket's whole life. The
    same endpoint is also routed, for paths under a ``root_path``."""

    unwrapped = UnwrappedSockets(lambda socket, send: session.serve_socket(socket, send))

    mcp: Any = None
    """The MCP endpoint (:class:`~reasonloop.server.mcp.endpoint.MCPEndpoint`), served the same way."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.mcp is not None and self.mcp.takes(scope):
            await self.mcp(scope, receive, send)
            return
        if self.unwrapped.takes(scope):
            scope["app"] = self
            await self.unwrapped(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


def create_app(
    settings: Settings | None = None,
    *,
    runner: Runner | None = None,
    store: RunStore | None = None,
    registry: Registry | None = None,
    kb_opener: Callable[[Path], Any] | None = None,
) -> FastAPI:
    """Build the app.

    Args:
        settings: Effective settings (default: :func:`~reasonloop.config.load_settings`).
        runner: Turns run requests into events (default: the Agent API with the tenant's knowledge base).
        store: Run store (default: the one ``[runs] store`` names).
        registry: Plugin registry (default: the process registry, with the built-in strategies and tools).
        kb_opener: ``path -> knowledge base`` (default: ``KnowledgeBase.open``).
    """
    settings = settings or load_settings()
    registry = registry or Registry.default()
    resources = AgentResources()
    state = ServerState(
        settings=settings,
        gate=Gate(settings.server),
        registry=registry,
        read_agents=lambda: declared_agents(settings),
        new_outbox=Outbox,
        feedback=lambda: resources.feedback_store(settings),
        mcp=(lambda: resources.mcp_manager(settings)) if settings.tools.mcp_servers else None,
    )
    state.kb = KBProvider(settings, kb_opener)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        warning = auth_warning(settings.server)
        if warning:
            log.warning(warning)
        registry.add_builtins()  # the catalogs list our own plugins even from a bare registry
        run_store = store or open_store(settings, registry)
        await run_store.open()  # RunStoreUnavailable here stops start-up with the reason
        chosen = runner
        if chosen is None:
            chosen = AgentRunner(settings, registry, state.kb, declared=lambda: state.agents, resources=resources)
        manager = RunManager(run_store, chosen, settings.runs, approvals=settings.approvals)
        try:
            await manager.open()
        except BaseException:
            await run_store.close()
            raise
        state.manager = manager
        state.models = getattr(chosen, "models", None)
        state.gate.rates.shared = manager.rate_buckets()  # where the store keeps them, every instance's budget
        state.metrics = _metrics(manager)
        # One tracing per process: this app turns it on (and off at its end) unless it is on already.
        own_tracing = telemetry.configure(settings) if telemetry.tracing is None else None
        tracing = telemetry.tracing
        if tracing is not None and state.metrics is not None:
            tracing.observers.append(state.metrics.observe_genai)
        state.ready = True
        try:
            async with AsyncExitStack() as serving:
                if app.mcp is not None:
                    await serving.enter_async_context(app.mcp.serving(state))
                yield
        finally:
            state.ready = False
            if tracing is not None and state.metrics is not None:
                tracing.observers.remove(state.metrics.observe_genai)
            if own_tracing is not None and telemetry.tracing is own_tracing:
                telemetry.shutdown()
            await manager.close()
            close_runner = getattr(chosen, "aclose", None)
            if close_runner is not None:  # its models' connections
                await close_runner()
            await state.kb.close()
            await resources.aclose()
            await run_store.close()

    app = ReasonloopAPI(
        title="reasonloop",
        version=__version__,
        description="Answer questions over your own documents with pluggable reasoning.",
        lifespan=lifespan,
        docs_url=None,  # FastAPI's pages load their assets from a CDN: ours are served by the app
        redoc_url=None,
    )
    app.state.reasonloop = state
    if settings.mcp.http:
        from reasonloop.server.mcp.endpoint import MCPEndpoint

        app.mcp = MCPEndpoint(settings.mcp.path)
    # Outermost last: the site check first, then the upload limit (a refusal of either answers
    # before any body is read), then CORS, whose headers every answer of the routes carries.
    if settings.server.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.server.cors_origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["X-Run-Id"],
        )
    upload_limit = kb.upload_body_limit(settings.server.max_upload_bytes)
    app.add_middleware(UploadSizeGuard, path=kb.UPLOAD_PATH, limit=upload_limit)
    if not state.gate.enabled:  # with keys, the key decides (see reasonloop.server.gate)
        app.add_middleware(SiteGuard, gate=state.gate)
    install_error_handlers(app)
    for module in (runs, catalog, kb, documents, pages, conversations, openai, session, health):
        app.include_router(module.router)
    install_docs(app)
    install_webui(app)
    return app


def _metrics(manager: RunManager) -> Any:
    try:
        from reasonloop.server.metrics import Metrics
    except ImportError:  # prometheus_client not installed
        return None
    metrics = Metrics()
    metrics.attach(manager)
    return metrics
