"""Conversations answer one question at a time: the turn-taking of runs that continue one.

Within a process, :class:`ConversationTurns` holds which run of each conversation is in flight;
across processes, a store that has ``continuing_runs`` (see
:class:`~reasonloop.runs.stores.protocol.StoreFeatures`) refuses to record a second one.
A question that arrives while the previous run has answered but is still storing its turn
waits for that briefly instead of being refused.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from reasonloop.errors import ConversationBusy, RequestInvalid
from reasonloop.llm.base import Message
from reasonloop.runs.models import ConversationRecord, RunRecord, RunRequest, new_id
from reasonloop.runs.stores.protocol import RunStore

__all__ = ["ConversationTurns"]

_TURN_WAIT_S = 0.25
"""How long a question waits for a run of its conversation on another instance (one that has
answered may still be storing its turn) before it is refused as busy."""


class ConversationTurns:
    """Which run of each conversation is in flight in this process.

    Args:
        store: Where conversations are kept.
        stop_wait_s: How long a question waits for the previous run of its conversation to store its turn.
    """

    def __init__(self, store: RunStore, stop_wait_s: float) -> None:
        self.store = store
        self.stop_wait_s = stop_wait_s
        self.holders: dict[str, str] = {}
        """conversation id -> the run of it in flight here."""

    async def claim(
        self, conversation_id: str, run_id: str, answering: Callable[[str], asyncio.Task[None] | None]
    ) -> None:
        """Take the conversation's turn for ``run_id``, waiting for a run of it that has answered.

        Args:
            answering: The task of a run of this process that has answered but not yet ended
                (None: the run is still answering, or gone).

        Raises:
            ConversationBusy: a run of the conversation is still answering (or still storing its turn).
        """
        while (holder := self.holders.get(conversation_id)) is not None:
            task = answering(holder)
            if task is None:
                raise ConversationBusy(
                    f"conversation {conversation_id} is still answering run {holder}: wait for its end, or stop it",
                    run_id=holder,
                    conversation_id=conversation_id,
                )
            # Answered, its turn being stored: the next question waits for that, not the client.
            await asyncio.wait({task}, timeout=self.stop_wait_s)
            if not task.done():
                raise ConversationBusy(
                    f"conversation {conversation_id} is still storing the turn of run {holder}; try again",
                    run_id=holder,
                    conversation_id=conversation_id,
                )
        self.holders[conversation_id] = run_id  # taken before any other wait: one question at a time

    def take(self, conversation_id: str, run_id: str) -> None:
        self.holders[conversation_id] = run_id

    def release(self, conversation_id: str | None, run_id: str) -> None:
        """Let the conversation take its next question, if ``run_id`` holds it."""
        if conversation_id and self.holders.get(conversation_id) == run_id:
            del self.holders[conversation_id]

    async def resolve(self, request: RunRequest) -> tuple[str, ConversationRecord | None]:
        """The request's conversation id, and the conversation to create when it starts one; a
        request continuing a conversation without history gets the conversation's messages.

        Raises:
            RequestInvalid: no such conversation (or another tenant's).
        """
        if request.conversation_id is None:
            conv = ConversationRecord(
                conversation_id=new_id("conv"), tenant=request.tenant, title=request.question[:80]
            )
            return conv.conversation_id, conv
        conv = await self.store.get_conversation(request.conversation_id)
        if conv is None or conv.tenant != request.tenant:
            raise RequestInvalid(f"no conversation {request.conversation_id!r}", field="conversation_id")
        if not request.history:
            request.history = [
                Message(role=m["role"], content=m.get("content", ""))
                for m in conv.messages
                if m.get("role") in ("user", "assistant")
            ]
        return conv.conversation_id, None

    @staticmethod
    async def record_continuing(create: Callable[[RunRecord], Awaitable[str | None]], record: RunRecord) -> None:
        """Record a run that continues its conversation, unless a run of the conversation is in
        flight on another instance. One that has answered and is storing its turn is given
        :data:`_TURN_WAIT_S` to finish.

        Raises:
            ConversationBusy: another run of the conversation is in flight.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + _TURN_WAIT_S
        while (holder := await create(record)) is not None:
            if loop.time() >= deadline:
                raise ConversationBusy(
                    f"conversation {record.conversation_id} is still answering run {holder} on another"
                    " instance: wait for its end, or stop it",
                    run_id=holder,
                    conversation_id=record.conversation_id,
                )
            await asyncio.sleep(_TURN_WAIT_S / 5)
