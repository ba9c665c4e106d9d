"""Conversations (list, read with messages, rename, delete) and feedback on answers."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from pydantic import BaseModel, Field, field_validator

from reasonloop.errors import ConversationNotFound
from reasonloop.kb.access import user_of
from reasonloop.runs.models import ConversationRecord
from reasonloop.server.deps import principal, server_state
from reasonloop.server.gate import Caller
from reasonloop.unicode_text import CheckedText

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["conversations"])


class ConversationSummary(BaseModel):
    """A conversation as listed: what it is, not its messages (``GET /v1/conversations/{id}`` has them)."""

    conversation_id: str
    tenant: str
    title: str
    created_at: float
    updated_at: float


@router.get("/conversations", response_model=list[ConversationSummary])
async def list_conversations(
    request: Request, who: Annotated[Caller, Depends(principal)], limit: int = Query(50, ge=1, le=500)
) -> list[ConversationSummary]:
    """The caller's conversations, most recently updated first (without messages: an empty list
    there would read as a conversation with none)."""
    state = server_state(request)
    listed = await state.runs.records.conversations(who.tenant, limit)
    if not who.reader.everything:  # a key that may not read every document: its own conversations
        mine = []
        for conv in listed:
            try:
                await state.check_conversation(
                    await state.runs.records.conversation(conv.conversation_id, who.tenant), who.reader
                )
            except ConversationNotFound:
                continue
            mine.append(conv)
        listed = mine
    return [ConversationSummary.model_validate(c.model_dump(exclude={"messages"})) for c in listed]


@router.get("/conversations/{conversation_id}", response_model=ConversationRecord)
async def get_conversation(
    conversation_id: str, request: Request, who: Annotated[Caller, Depends(principal)]
) -> ConversationRecord:
    """A conversation with its messages."""
    state = server_state(request)
    conversation = await state.runs.records.conversation(conversation_id, who.tenant)
    await state.check_conversation(conversation, who.reader)
    return conversation


class ConversationRename(CheckedText):
    """The body of ``PATCH /v1/conversations/{id}``."""

    title: str = Field(min_length=1, max_length=200, json_schema_extra={"pattern": r"\S"})

    @field_validator("title")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the title is empty")
        return value.strip()


@router.patch("/conversations/{conversation_id}", response_model=ConversationSummary)
async def rename_conversation(
    conversation_id: str, body: ConversationRename, request: Request, who: Annotated[Caller, Depends(principal)]
) -> ConversationSummary:
    """Rename a conversation (its messages are kept)."""
    state = server_state(request)
    await state.check_conversation(await state.runs.records.conversation(conversation_id, who.tenant), who.reader)
    conv = await server_state(request).runs.records.rename_conversation(conversation_id, who.tenant, body.title)
    return ConversationSummary.model_validate(conv.model_dump(exclude={"messages"}))


@router.delete("/conversations/{conversation_id}", status_code=204)
async def delete_conversation(
    conversation_id: str, request: Request, who: Annotated[Caller, Depends(principal)]
) -> Response:
    state = server_state(request)
    await state.check_conversation(await state.runs.records.conversation(conversation_id, who.tenant), who.reader)
    await state.runs.records.delete_conversation(conversation_id, who.tenant)
    return Response(status_code=204)


class Feedback(CheckedText):
    """A judgement of one answer."""

    run_id: str
    rating: Literal[-1, 0, 1]
    """-1 bad, 0 neutral, 1 good."""
    comment: str = Field(default="", max_length=4000)
    correction: str = Field(default="", max_length=20000)
    """What the answer should have said, if the user knows."""


@router.post("/feedback", status_code=201)
async def post_feedback(body: Feedback, request: Request, who: Annotated[Caller, Depends(principal)]) -> dict[str, Any]:
    """Record feedback on a run the caller can see (404 otherwise)."""
    state = server_state(request)
    await state.check_run(body.run_id, who)
    record = await state.runs.get(body.run_id, who.tenant)
    entry = body.model_dump() | {"tenant": who.tenant, "question": record.question, "answer": record.content}
    entry["ts"] = time.time()
    await state.runs.records.add_feedback(entry)
    if body.rating != 0:
        await _guide_later_runs(state.feedback, user_of(who.tenant, who.reader), record.conversation_id or "", body)
    return {"ok": True, "run_id": body.run_id}


async def _guide_later_runs(feedback: Callable[[], Any] | None, user: str, conversation: str, body: Feedback) -> None:
    """Also record the judgement where the agents read their feedback guidance (per tenant, and per
    reader within it: :func:`~reasonloop.kb.access.user_of`)."""
    if feedback is None:
        return
    reason = body.comment or (f"should have said: {body.correction}" if body.correction else "")
    rating = "good" if body.rating > 0 else "bad"
    await feedback().add(user, conversation, rating, reason, run_id=body.run_id)
