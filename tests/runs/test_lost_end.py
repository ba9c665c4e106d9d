"""record_lost_end: a run that ended while the store was lost, given to the store once it is back."""

from __future__ import annotations

import asyncio

from reasonloop.events import Answer, AnswerDelta, ErrorEvent, RunStarted
from reasonloop.runs import upkeep as upkeep_module
from reasonloop.runs.live import LiveRun
from reasonloop.runs.models import ConversationRecord, RunRecord, RunRequest
from reasonloop.runs.recording.recorder import record_lost_end
from tests.runs.helpers import GatedRunner


async def drain(events) -> list:
    return [event async for event in events]


def stamped(run_id: str, seq: int, event):
    event.run_id, event.seq = run_id, seq
    return event


def lost_run(run_id: str, sent: list, **record) -> LiveRun:
    """A run whose readers were sent ``sent`` (its end last) while the store was gone."""
    live = LiveRun(
        record=RunRecord(run_id=run_id, question="q", conversation_id="conv_l", **record),
    )
    for event in sent:
        live.publish(event, event.to_json())
    return live


async def test_the_end_goes_after_events_the_store_holds_but_readers_were_not_sent(store):
    await store.create_conversation(ConversationRecord(conversation_id="conv_l"))
    await store.create_run(RunRecord(run_id="run_l", status="running", conversation_id="conv_l"))
    for seq, event in enumerate(
        [RunStarted(reasoning="x", question="q"), AnswerDelta(text="a "), AnswerDelta(text="b ")], 1
    ):
        await store.append_event("run_l", stamped("run_l", seq, event))  # 3 stored
    error = stamped("run_l", 3, ErrorEvent(code="run.store_unavailable", message="lost"))  # readers had 2, then this
    live = lost_run(
        "run_l",
        [
            stamped("run_l", 1, RunStarted(reasoning="x", question="q")),
            stamped("run_l", 2, AnswerDelta(text="a ")),
            error,
        ],
        status="failed",
        content="a ",
        stop_reason="error",
        error={"code": error.code, "message": error.message},
        ended_at=error.ts,
    )
    await record_lost_end(store, live)
    events = await store.events("run_l")
    assert [e.seq for e in events] == [1, 2, 3, 4]
    assert isinstance(events[2], AnswerDelta) and isinstance(events[3], ErrorEvent)
    record = await store.get_run("run_l")
    assert record.status == "failed" and record.last_seq == 4
    assert [m["content"] for m in (await store.get_conversation("conv_l")).messages] == ["q", "a "]


async def test_an_event_recorded_meanwhile_is_not_a_failure(store):
    class RecordsMeanwhile:  # another process's journal import wrote the first missing event just before
        def __init__(self, store) -> None:
            self.store, self.first = store, True

        def __getattr__(self, name):
            return getattr(self.store, name)

        async def append_event(self, run_id, event, payload=None):
            if self.first:
                self.first = False
                await self.store.append_event(run_id, event)
            await self.store.append_event(run_id, event, payload)

    await store.create_run(RunRecord(run_id="run_m", status="running"))
    sent = [stamped("run_m", 1, RunStarted(reasoning="x", question="q")), stamped("run_m", 2, Answer(text="done"))]
    live = lost_run("run_m", sent, status="completed", content="done", stop_reason="final", ended_at=sent[-1].ts)
    live.record.conversation_id = None
    await record_lost_end(RecordsMeanwhile(store), live)
    assert [e.seq for e in await store.events("run_m")] == [1, 2]
    assert (await store.get_run("run_m")).status == "completed"


async def test_an_end_the_store_has_already_is_kept(store):
    await store.create_conversation(ConversationRecord(conversation_id="conv_l"))
    await store.create_run(RunRecord(run_id="run_s", status="running", conversation_id="conv_l", question="q"))
    stored = [stamped("run_s", 1, RunStarted(reasoning="x", question="q")), stamped("run_s", 2, Answer(text="all"))]
    for event in stored:
        await store.append_event("run_s", event)  # the answer was stored; its status update was not
    error = stamped("run_s", 3, ErrorEvent(code="run.store_unavailable", message="lost"))
    live = lost_run("run_s", [*stored, error], status="failed", content="all", stop_reason="error")
    await record_lost_end(store, live)
    assert [e.seq for e in await store.events("run_s")] == [1, 2]  # nothing after the answer
    record = await store.get_run("run_s")
    assert record.status == "completed" and record.content == "all" and record.error is None
    assert [m["content"] for m in (await store.get_conversation("conv_l")).messages] == ["q", "all"]
    await store.update_run("run_s", status="interrupted")  # another instance's recovery, say
    await record_lost_end(store, live)
    assert (await store.get_run("run_s")).status == "interrupted"  # a finished record stands
    assert len((await store.get_conversation("conv_l")).messages) == 2  # and its turn is not added twice


async def test_closing_the_manager_gives_a_store_that_is_back_the_runs_it_lost(store, monkeypatch):
    from reasonloop.config import RunsSettings
    from reasonloop.runs.manager import RunManager

    monkeypatch.setattr(upkeep_module, "_HEARTBEAT_S", 3600)  # no housekeeping round before close
    runner = GatedRunner(steps=2)
    manager = RunManager(store, runner, RunsSettings(journal=False))
    await manager.open()
    record = await manager.start(RunRequest(question="q"))
    sub = (await manager.read(record.run_id)).events()
    sent = [await anext(sub), await anext(sub)]
    await store.close()
    runner.finish(record.run_id)
    sent += await drain(sub)
    assert isinstance(sent[-1], ErrorEvent)
    await store.open()
    await asyncio.wait_for(manager.close(), 10)
    stored = await store.get_run(record.run_id)
    assert stored.status == "failed" and stored.last_seq == sent[-1].seq
