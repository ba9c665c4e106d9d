"""The end of a run that ended while the run store was lost, given to the store once it is back."""

from __future__ import annotations

import contextlib

from reasonloop.events import event_adapter, number
from reasonloop.runs.live import LiveRun
from reasonloop.runs.models import is_terminal_event
from reasonloop.runs.recovery import ended_fields, restore_turn
from reasonloop.runs.stores.protocol import RunStore

__all__ = ["record_lost_end"]


async def record_lost_end(store: RunStore, live: LiveRun) -> None:
    """Give the store the end of a run that ended while the store was lost: the events its
    readers were sent that the store lacks, the end they were given, the run's final status
    and its conversation turn. A run left ``running`` in the store would otherwise stay so
    for as long as its process lives, and readers on other instances would wait for it.

    Nothing is added after an end the store already has (recorded before the loss, or by
    another instance's recovery meanwhile): the store's end stands.

    Raises:
        RunStoreUnavailable: the store is still unavailable (try again later).
    """
    record = live.record
    stored_record = await store.get_run(record.run_id)
    if stored_record is None:  # the store came back empty (a Redis without persistence): the run as it ran
        running = {"status": "running", "content": "", "stop_reason": None, "error": None, "ended_at": None}
        await store.create_run(record.model_copy(update={**running, "last_seq": 0}))
    elif stored_record.finished:
        await restore_turn(
            store, stored_record, stored_record.content, stored_record.status, stored_record.ended_at or 0
        )
        return
    stored = await store.events(record.run_id)
    if stored and is_terminal_event(stored[-1]):  # the end is there, its status is not
        fields = ended_fields(stored[-1], stored)
        await store.update_run(record.run_id, **fields)
        await restore_turn(store, record, fields["content"], fields["status"], fields["ended_at"])
        return
    last_stored = stored[-1].seq if stored else 0
    missing = [event_adapter.validate_json(payload) for payload in live.payloads[last_stored:]]
    if not missing:  # stored past what was sent: the end goes after
        final = event_adapter.validate_json(live.payloads[-1])
        number(final, last_stored + 1)
        missing = [final]
    for event in missing:
        with contextlib.suppress(ValueError):  # recorded meanwhile (a journal import)
            await store.append_event(record.run_id, event)
    # The status last: a reader that sees the run finished finds its end stored (follow() relies on it).
    await store.update_run(
        record.run_id,
        status=record.status,
        content=record.content,
        stop_reason=record.stop_reason,
        error=record.error,
        last_seq=missing[-1].seq,
        ended_at=record.ended_at,
    )
    await restore_turn(store, record, record.content, record.status, record.ended_at or 0.0)
