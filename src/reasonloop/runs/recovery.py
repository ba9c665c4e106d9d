"""Recovery: runs left in flight by a dead instance are ended, their partial answer kept.

A run's record says which instance executes it (:mod:`reasonloop.runs.instance`). When that
instance is gone, the run's stream is ended with a last :class:`~reasonloop.events.Answer`
(``stop_reason="interrupted"``), its record is marked and its turn added to its conversation,
so every reader of the run sees it end like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reasonloop.events import Answer, ErrorEvent, Event, number
from reasonloop.runs.models import RunRecord, answer_status, conversation_turn, is_terminal_event, partial_content
from reasonloop.runs.stores.protocol import RunStore

__all__ = ["ended_fields", "recover_interrupted", "restore_turn"]


async def recover_interrupted(store: RunStore, *, me: str, wait_for: Callable[[str], bool] | None = None) -> list[str]:
    """Mark runs left in flight by dead instances as ``interrupted``, keeping their partial answer.

    The partial answer is appended as a last :class:`~reasonloop.events.Answer` with
    ``stop_reason="interrupted"``, so streams of the run end like any other. Runs of an
    instance for which ``wait_for(instance)`` is true are left for a later call (their events
    are not all in the store yet).

    The run's turn (its question and the answer, partial or whole) is added to its
    conversation as a finished run's would be, unless the conversation has it already.

    Returns:
        The ids of the runs marked.
    """
    marked: list[str] = []
    # Not this instance's own runs: they are alive, and reading them all (every few seconds, with
    # thousands streaming) would cost more than the rest of recovery together.
    for record in await store.inflight_runs(exclude_instance=me):
        if wait_for is not None and wait_for(record.instance):
            continue
        if await store.instance_alive(record.instance):
            continue
        events = await store.events(record.run_id)
        if events and is_terminal_event(events[-1]):  # it ended, but died before saying so
            fields = ended_fields(events[-1], events)
            await store.update_run(record.run_id, **fields)
            await restore_turn(store, record, fields["content"], fields["status"], fields["ended_at"])
            continue
        content = partial_content(events)
        last = events[-1].seq if events else record.last_seq
        final = number(Answer(run_id=record.run_id, text=content, stop_reason="interrupted"), last + 1)
        try:
            await store.append_event(record.run_id, final)
        except ValueError:  # another instance recovered it first
            continue
        await store.update_run(
            record.run_id,
            status="interrupted",
            content=content,
            last_seq=last + 1,
            stop_reason="interrupted",
            ended_at=final.ts,
        )
        await restore_turn(store, record, content, "interrupted", final.ts)
        marked.append(record.run_id)
    return marked


async def restore_turn(store: RunStore, record: RunRecord, content: str, status: str, ended_at: float) -> None:
    """Add the turn of a run that ended without its turn stored (its process died, or the store
    was lost when it ended), unless the conversation has it already."""
    turn = conversation_turn(record.model_copy(update={"status": status}), content, ended_at)
    if turn is None or record.conversation_id is None:
        return
    await store.add_turn(record.conversation_id, record.run_id, turn)


def ended_fields(terminal: Event, events: list[Event]) -> dict[str, Any]:
    """The record fields of a run whose last event is ``terminal`` (its answer or error)."""
    if isinstance(terminal, Answer):
        return {
            "status": answer_status(terminal),
            "content": terminal.text,
            "stop_reason": terminal.stop_reason,
            "last_seq": terminal.seq,
            "ended_at": terminal.ts,
        }
    assert isinstance(terminal, ErrorEvent)
    return {
        "status": "failed",
        "content": partial_content(events),
        "stop_reason": "error",
        "error": {"code": terminal.code, "message": terminal.message},
        "last_seq": terminal.seq,
        "ended_at": terminal.ts,
    }
