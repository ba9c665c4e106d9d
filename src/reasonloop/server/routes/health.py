"""Health: the process is up (``/healthz``), runs can start (``/readyz``), and Prometheus metrics
(``/metrics``). None of them needs a key: a load balancer or a scraper asks them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, Response

from reasonloop.server.deps import server_state

__all__ = ["router"]

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process is up."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(request: Request, response: Response) -> dict[str, Any]:
    """The run store answers, takes writes, and runs can start."""
    state = server_state(request)
    if not state.ready or state.manager is None:
        response.status_code = 503
        return {"status": "starting"}
    try:
        await state.manager.check_ready()
    except Exception as exc:
        response.status_code = 503
        return {"status": "unavailable", "error": str(exc)}
    return {"status": "ready", **state.manager.active_counts()}


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    """Prometheus metrics (runs by status, latency histograms, LLM tokens, tool calls)."""
    state = server_state(request)
    if state.metrics is None:
        return Response("prometheus_client is not installed\n", status_code=501, media_type="text/plain")
    from reasonloop.server.metrics import CONTENT_TYPE_LATEST

    return Response(state.metrics.render(), media_type=CONTENT_TYPE_LATEST)
