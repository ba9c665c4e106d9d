"""A tenant's records, as surfaces read and change them: its runs listed, its conversations (read,
renamed, deleted) and feedback on its answers.

Every method takes the tenant and sees nothing of another's: a conversation of another tenant is
not found, as one that does not exist. Surfaces reach these through
:attr:`RunManager.records <reasonloop.runs.manager.RunManager.records>`, never the store itself.

Example::

    convs = await manager.records.conversations("acme")
    await manager.records.rename_conversation(convs[0].conversation_id, "acme", "Storage engines")
"""

from __future__ import annotations

from typing import Any

from reasonloop.errors import ConversationNotFound
from reasonloop.runs.models import ConversationRecord, RunRecord
from reasonloop.runs.stores.protocol import RunStore

__all__ = ["Records"]


class Records:
    """A tenant's runs, conversations and feedback in the run store.

    Args:
        store: The run store (opened by its owner).
    """

    def __init__(self, store: RunStore) -> None:
        self.store = store

    async def runs(self, tenant: str, limit: int = 50) -> list[RunRecord]:
        """The tenant's most recent runs, newest first."""
        return await self.store.list_runs(tenant, limit)

    async def conversations(self, tenant: str, limit: int = 50) -> list[ConversationRecord]:
        """The tenant's conversations, most recently updated first."""
        return await self.store.list_conversations(tenant, limit)

    async def conversation(self, conversation_id: str, tenant: str) -> ConversationRecord:
        """The conversation with its messages.

        Raises:
            ConversationNotFound: no such conversation, or another tenant's.
        """
        conv = await self.store.get_conversation(conversation_id)
        if conv is None or conv.tenant != tenant:
            raise ConversationNotFound(f"no conversation {conversation_id!r}", conversation_id=conversation_id)
        return conv

    async def rename_conversation(self, conversation_id: str, tenant: str, title: str) -> ConversationRecord:
        """Give the conversation ``title`` (its messages are kept); returns it renamed.

        Raises:
            ConversationNotFound: no such conversation (or it was deleted meanwhile), or another tenant's.
        """
        conv = await self.conversation(conversation_id, tenant)
        if not await self.store.rename_conversation(conversation_id, title):
            raise ConversationNotFound(f"no conversation {conversation_id!r}", conversation_id=conversation_id)
        conv.title = title
        return conv

    async def delete_conversation(self, conversation_id: str, tenant: str) -> None:
        """Delete the conversation and its messages.

        Raises:
            ConversationNotFound: no such conversation, or another tenant's.
        """
        await self.conversation(conversation_id, tenant)
        await self.store.delete_conversation(conversation_id)

    async def add_feedback(self, feedback: dict[str, Any]) -> None:
        """Keep a judgement of an answer (its ``tenant`` and ``run_id`` among its fields)."""
        await self.store.add_feedback(feedback)
