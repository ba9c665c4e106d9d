import asyncio

import pytest

from reasonloop.config import load_settings
from reasonloop.tools.base import RunScope, ToolContext
from reasonloop.tools.feedback import FeedbackStore, FeedbackTool


@pytest.fixture
def store(tmp_path):
    s = FeedbackStore(tmp_path / "sub" / "feedback.sqlite")
    yield s
    s.close()


async def test_feedback_persists_across_store_instances(tmp_path):
    path = tmp_path / "fb.sqlite"
    first = FeedbackStore(path)
    await first.add("ann", "c1", "bad", "imprecise:   quote   sources", run_id="r1")
    first.close()
    second = FeedbackStore(path)
    [item] = await second.recent("ann", "c1")
    second.close()
    assert (item.rating, item.reason, item.run_id, item.conversation) == ("bad", "imprecise: quote sources", "r1", "c1")


async def test_recent_is_per_user_and_prefers_the_conversation(store):
    await store.add("ann", "c1", "bad", "too long")
    await store.add("bob", "c1", "bad", "bob's problem")
    await store.add("ann", "c2", "good", "clear")
    recent = await store.recent("ann", "c1", limit=5)
    assert [(f.conversation, f.reason) for f in recent] == [("c1", "too long"), ("c2", "clear")]
    assert [f.reason for f in await store.recent("ann", "c1", limit=1)] == ["too long"]
    assert await store.recent("nobody") == []


async def test_guidance_tells_the_model_what_went_wrong(store):
    assert await store.recent_guidance("ann", "c1") == ""
    await store.add("ann", "c1", "bad", "imprecise")
    await store.add("ann", "c1", "bad", "no sources")
    await store.add("ann", "c1", "good", "concise")
    text = await store.recent_guidance("ann", "c1")
    assert "2 of the last 3 answers were judged bad" in text
    assert "'imprecise'" in text and "'no sources'" in text and "Avoid these problems" in text
    assert "'concise'" in text


async def test_bad_without_reason_still_guides(store):
    await store.add("ann", "c1", "bad")
    assert "be careful, precise and cite sources" in await store.recent_guidance("ann", "c1")


async def test_invalid_rating_is_refused(store):
    with pytest.raises(ValueError, match="rating"):
        await store.add("ann", "c1", "meh")  # type: ignore[arg-type]


async def test_concurrent_writers(store):
    await asyncio.gather(*(store.add("ann", "c1", "good", str(i)) for i in range(40)))
    assert len(await store.recent("ann", "c1", limit=100)) == 40


async def test_feedback_tool_records_into_the_shared_store(store):
    ctx = ToolContext(run_id="run-9", scope=RunScope(feedback=store, user="ann", conversation="c7"))
    out = await FeedbackTool().invoke({"rating": "bad", "reason": "wrong date"}, ctx)
    assert out.ok and "judged bad (wrong date)" in out.text
    [item] = await store.recent("ann", "c7")
    assert (item.run_id, item.reason) == ("run-9", "wrong date")
    # outside a run (API/CLI) lands in the same store and shapes the same guidance
    await store.add("ann", "c7", "bad", "too vague")
    assert "'too vague'" in await store.recent_guidance("ann", "c7")


async def test_feedback_tool_errors(store):
    out = await FeedbackTool().invoke({"rating": "bad"}, ToolContext())
    assert out.error["code"] == "tool.unavailable"
    bad = await FeedbackTool().invoke({"rating": "awful"}, ToolContext(scope=RunScope(feedback=store)))
    assert bad.error["code"] == "tool.invalid_arguments"


def test_store_location_from_settings(tmp_path):
    settings = load_settings(kb={"path": str(tmp_path / "kb")})
    store = FeedbackStore.from_settings(settings)
    store.close()
    assert store.path == str(tmp_path / "kb" / "feedback.sqlite")
    custom = FeedbackStore.from_settings(load_settings(tools={"feedback": {"path": str(tmp_path / "f.db")}}))
    custom.close()
    assert custom.path == str(tmp_path / "f.db")
