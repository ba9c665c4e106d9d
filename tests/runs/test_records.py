"""A tenant's records through the run manager's services, over both stores: nothing of another
tenant's is seen, renamed or deleted; readiness and shared rate buckets as each store offers them."""

from __future__ import annotations

import pytest

from reasonloop.errors import ConversationNotFound, RunStoreUnavailable
from reasonloop.runs.manager import RunManager
from reasonloop.runs.models import ConversationRecord, RunRecord
from reasonloop.runs.records import Records
from tests.runs.helpers import GatedRunner


async def test_conversations_are_scoped_to_their_tenant(any_store):
    records = Records(any_store)
    await any_store.create_conversation(ConversationRecord(conversation_id="conv_a", tenant="a", title="first"))
    await any_store.add_messages("conv_a", [{"role": "user", "content": "hi"}])
    assert [c.conversation_id for c in await records.conversations("a")] == ["conv_a"]
    assert await records.conversations("b") == []
    assert (await records.conversation("conv_a", "a")).messages[0]["content"] == "hi"
    for attempt in (
        records.conversation("conv_a", "b"),
        records.rename_conversation("conv_a", "b", "taken"),
        records.delete_conversation("conv_a", "b"),
        records.conversation("conv_nope", "a"),
    ):
        with pytest.raises(ConversationNotFound):
            await attempt
    renamed = await records.rename_conversation("conv_a", "a", "second")
    assert renamed.title == "second" and (await records.conversation("conv_a", "a")).title == "second"
    assert renamed.messages  # renamed, its messages kept
    await records.delete_conversation("conv_a", "a")
    with pytest.raises(ConversationNotFound):
        await records.conversation("conv_a", "a")


async def test_runs_are_listed_for_their_tenant_only(any_store):
    records = Records(any_store)
    await any_store.create_run(RunRecord(run_id="run_a", tenant="a", question="q"))
    assert [r.run_id for r in await records.runs("a")] == ["run_a"]
    assert await records.runs("b") == []


async def test_readiness_and_shared_rate_buckets_as_the_store_offers_them(any_store):
    manager = RunManager(any_store, GatedRunner())
    await manager.check_ready()
    take = manager.rate_buckets()
    if any_store.features.rate_buckets:  # Redis: one budget for every instance
        assert await take("k", 10.0, 1) == 0.0 and await take("k", 10.0, 1) > 0
    else:
        assert take is None
    await any_store.close()
    with pytest.raises(RunStoreUnavailable):
        await manager.check_ready()
