"""Runs over HTTP: start, read, stream (SSE with Last-Event-ID resume), stop, answer approvals."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from pydantic import BaseModel
from sse_starlette.sse import EventSourceResponse

from reasonloop.errors import ReasonLoopError, RequestInvalid
from reasonloop.events import EVENT_SCHEMA, RunResult
from reasonloop.runs.approvals import ApprovalAnswer, ApprovalView
from reasonloop.runs.models import MAX_SEQ, RunAsk, RunRecord, RunRequest
from reasonloop.runs.reading import RunFeed
from reasonloop.server.deps import principal, sees, server_state
from reasonloop.server.gate import Caller, decider
from reasonloop.server.routes.stopping import run_stream
from reasonloop.server.withheld import withhold, withhold_json
from reasonloop.telemetry import trace_headers

__all__ = ["EVENT_SCHEMA_HEADER", "router", "sse_frames"]

EVENT_SCHEMA_HEADER = "X-Reasonloop-Event-Schema"
"""Response header of an event stream: the version of its events' format (:data:`~reasonloop.events.EVENT_SCHEMA`)."""

router = APIRouter(prefix="/v1/runs", tags=["runs"])


class RunView(BaseModel):
    """A run's record, and its result as far as it got."""

    run: RunRecord
    result: RunResult | None = None


@router.post("", status_code=201, response_model=RunRecord)
async def start_run(body: RunAsk, request: Request, who: Annotated[Caller, Depends(principal)]) -> RunRecord:
    """Start a run; it executes in the background. Stream it from ``/v1/runs/{id}/events``."""
    run_req = RunRequest(**body.model_dump(), **who.run_fields(), trace_context=trace_headers(request.headers))
    return await server_state(request).start(run_req)


@router.get("", response_model=list[RunRecord])
async def list_runs(
    request: Request, who: Annotated[Caller, Depends(principal)], limit: int = Query(50, ge=1, le=500)
) -> list[RunRecord]:
    """The caller's most recent runs, newest first (a key that may not read every document: the
    runs it asked itself)."""
    listed = await server_state(request).runs.records.runs(who.tenant, limit)
    return [record for record in listed if sees(who.reader, record)]


@router.get("/{run_id}", response_model=RunView)
async def get_run(run_id: str, request: Request, who: Annotated[Caller, Depends(principal)]) -> RunView:
    """Status and result (partial while running) of a run."""
    state = server_state(request)
    await state.check_run(run_id, who)
    record, result = await state.runs.result(run_id, who.tenant)
    readable = await state.readable_documents(who)
    if readable is not None and result is not None:
        result = RunResult.model_validate(withhold(result.model_dump(mode="json"), readable))
    return RunView(run=record, result=result)


@router.get("/{run_id}/events")
async def run_events(
    run_id: str,
    request: Request,
    who: Annotated[Caller, Depends(principal)],
    last_event_id: Annotated[str | None, Header()] = None,
    after: int | None = Query(None, ge=0, lt=MAX_SEQ, description="Resume after this seq (as Last-Event-ID)."),
) -> EventSourceResponse:
    """Server-sent events: stored events, then live ones, until the run ends.

    Each SSE message has ``id`` = the event's seq, ``event`` = its type, ``data`` = its JSON; the
    event that ends the run has ``"final": true``. The ``X-Reasonloop-Event-Schema`` header names
    the events' format version.
    Reconnecting with ``Last-Event-ID`` (or ``?after=N``) resumes without gaps or duplicates;
    given both (a browser's ``EventSource`` reconnects to the URL it was given, adding the id it
    saw last), the later one wins.
    """
    after_seq = max(after or 0, _parse_seq(last_event_id))
    state = server_state(request)
    runs = state.runs
    await state.check_run(run_id, who)
    feed = await runs.read(run_id, after_seq, who.tenant)
    readable = await state.readable_documents(who)
    return run_stream(sse_frames(feed, readable), runs, headers={EVENT_SCHEMA_HEADER: str(EVENT_SCHEMA)})


def _parse_seq(value: str | None) -> int:
    """A ``Last-Event-ID``: one of the seqs this server sends as SSE ids.

    Raises:
        RequestInvalid: it is not one (422, naming the header).
    """
    if not value:
        return 0
    seq = int(value) if value.isascii() and value.isdigit() else -1
    if not 0 <= seq < MAX_SEQ:
        raise RequestInvalid(
            f"Last-Event-ID must be an event's seq, a whole number from 0 to {MAX_SEQ - 1}", field="last-event-id"
        )
    return seq


async def sse_frames(feed: RunFeed, readable: set[str] | None = None) -> AsyncIterator[dict[str, str]]:
    """SSE messages for a run's events; a failure while streaming becomes a last ``error`` message
    (``final``: nothing follows it on this stream). With ``readable``, citations of other
    documents are left out (:mod:`reasonloop.server.withheld`)."""
    try:
        async for delivery in feed:
            data = delivery.payload if readable is None else withhold_json(delivery.payload, readable)
            yield {"id": str(delivery.seq), "event": delivery.type, "data": data}
    except ReasonLoopError as exc:
        failed = {"type": "error", "code": exc.code, "message": exc.message, "final": True}
        yield {"event": "error", "data": json.dumps(failed)}


@router.post("/{run_id}/stop", response_model=RunRecord)
async def stop_run(run_id: str, request: Request, who: Annotated[Caller, Depends(principal)]) -> RunRecord:
    """Stop a run (whichever instance executes it). 404 if unknown, 409 if it already ended."""
    await server_state(request).check_run(run_id, who)
    return await server_state(request).runs.stop(run_id, who.tenant)


@router.get("/{run_id}/approvals", response_model=list[ApprovalView])
async def list_approvals(
    run_id: str, request: Request, who: Annotated[Caller, Depends(principal)]
) -> list[ApprovalView]:
    """Every tool call of the run that asked for approval: what was asked and why, and (once
    decided) who decided what, when, and the arguments the tool ran with."""
    return await server_state(request).runs.approvals_of(run_id, who.tenant)


@router.post("/{run_id}/approvals/{approval_id}", response_model=list[ApprovalView])
async def answer_approval(
    run_id: str, approval_id: str, body: ApprovalAnswer, request: Request, who: Annotated[Caller, Depends(principal)]
) -> list[ApprovalView]:
    """Confirm, modify or reject a tool call waiting for approval (whichever instance executes
    the run). 404 if the run or the approval is unknown (or the run has ended), 409 if it was
    decided already, 422 if modified arguments do not fit the tool's schema (it stays pending).
    Returns the run's approvals (the decision shows once the run has read it)."""
    runs = server_state(request).runs
    decision = body.decision_by(decider(who, "rest"))
    await runs.answer_approval(run_id, approval_id, decision, who.tenant)
    return await runs.approvals_of(run_id, who.tenant)
