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

from fastapi import FastAPI, Request, Response
from fastapi.middleware.cors import CORSMiddleware

from reasonloop import __version__, telemetry
from reasonloop.agents import AgentResources, AgentRunner, declared_agents
from reasonloop.config import Settings, load_settings
from reasonloop.registry import Registry
from reasonloop.runs.manager import RunManager, Runner
from reasonloop.runs.stores import RunStore, open_store
from reasonloop.server import (
    catalog_routes,
    conversation_routes,
    document_routes,
    kb_routes,
    openai_routes,
    pages_routes,
    runs_routes,
    ws,
)
from reasonloop.server.auth import Authenticator, auth_warning
from reasonloop.server.cross_site import CrossSiteGuard
from reasonloop.server.deps import ServerState
from reasonloop.server.docs_routes import install_docs
from reasonloop.server.errors import install_error_handlers
from reasonloop.server.kb_routes import KBProvider, UploadSizeGuard
from reasonloop.server.transport.outbox import Outbox
from reasonloop.server.transport.unwrapped import UnwrappedSockets
from reasonloop.server.webui import install_webui

__all__ = ["ReasonloopAPI", "create_app"]

log = logging.getLogger("reasonloop.server")


class ReasonloopAPI(FastAPI):
    """The FastAPI app, with ``/v1/ws`` sockets served before its middleware stack
    (:class:`~reasonloop.server.transport.unwrapped.UnwrappedSockets`): none of that middleware
    applies to a socket, and each layer would stay on the stack for the socket's whole life. The
    same endpoint is also routed, for paths under a ``root_path``."""

    unwrapped = UnwrappedSockets(lambda socket, send: ws.serve_socket(socket, send))

    mcp: Any = None
    """The MCP endpoint (:class:`~reasonloop.server.mcp_http.MCPEndpoint`), served the same way."""

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
        auth=Authenticator(settings.server),
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
        manager = RunManager(run_store, chosen, settings.runs)
        try:
            await manager.open()
        except BaseException:
            await run_store.close()
            raise
        state.store, state.manager = run_store, manager
        state.models = getattr(chosen, "models", None)
        if settings.runs.store == "redis":  # every instance draws from the same rate budgets
            from reasonloop.runs.stores.redis.store import RedisRunStore
            from reasonloop.server.rate_limit import RedisTokenBuckets

            if isinstance(run_store, RedisRunStore):
                state.auth.shared = RedisTokenBuckets(run_store.r, run_store.p).take
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
        from reasonloop.server.mcp_http import MCPEndpoint

        app.mcp = MCPEndpoint(settings.mcp.path)
    if settings.server.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.server.cors_origins,
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["X-Run-Id"],
        )
    app.add_middleware(UploadSizeGuard, max_upload_bytes=settings.server.max_upload_bytes)
    if not state.auth.enabled:  # with keys, the key decides (see reasonloop.server.cross_site)
        app.add_middleware(CrossSiteGuard, allowed=settings.server.cors_origins, allowed_hosts=state.allowed_hosts)
    install_error_handlers(app)
    for module in (
        runs_routes,
        catalog_routes,
        kb_routes,
        document_routes,
        pages_routes,
        conversation_routes,
        openai_routes,
        ws,
    ):
        app.include_router(module.router)
    _health_routes(app, state)
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


def _health_routes(app: FastAPI, state: ServerState) -> None:
    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """The process is up."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    async def readyz(response: Response) -> dict[str, Any]:
        """The run store answers, takes writes, and runs can start."""
        if not state.ready or state.store is None:
            response.status_code = 503
            return {"status": "starting"}
        try:
            await state.store.get_run("readyz-probe")
            if state.manager is not None:  # a write: a store that answers reads may refuse writes
                await state.store.heartbeat(state.manager.instance)
        except Exception as exc:
            response.status_code = 503
            return {"status": "unavailable", "error": str(exc)}
        return {"status": "ready", **(state.manager.active_counts() if state.manager else {})}

    @app.get("/metrics", tags=["health"])
    async def metrics(request: Request) -> Response:
        """Prometheus metrics (runs by status, latency histograms, LLM tokens, tool calls)."""
        if state.metrics is None:
            return Response("prometheus_client is not installed\n", status_code=501, media_type="text/plain")
        from reasonloop.server.metrics import CONTENT_TYPE_LATEST

        return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
