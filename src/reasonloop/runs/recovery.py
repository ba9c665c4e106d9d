"""Recovery: runs left in flight by a dead instance are resumed, or ended with their partial answer kept.

A run's record says which instance executes it (:mod:`reasonloop.runs.instance`). When that
instance is gone, the run goes on in this instance when it can (:mod:`reasonloop.runs.resume`);
otherwise its stream is ended with a last :class:`~reasonloop.events.Answer`
(``stop_reason="interrupted"``), its record is marked and its turn added to its conversation,
so every reader of the run sees it end like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from reasonloop.events import Answer, ErrorEvent, Event, number
from reasonloop.runs.models import RunRecord, answer_status, conversation_turn, is_terminal_event, partial_content
from reasonloop.runs.stores.protocol import RunStore


class Resume(Protocol):
    """What recovery asks of :class:`reasonloop.runs.resume.Resume`."""

    async def claim(self, record: RunRecord) -> bool: ...

    async def release(self, record: RunRecord, instance: str) -> None: ...

    async def start(self, record: RunRecord, events: list[Event]) -> bool: ...


__all__ = ["Resume", "ended_fields", "recover_interrupted", "restore_turn"]


async def recover_interrupted(
    store: RunStore, *, me: str, wait_for: Callable[[str], bool] | None = None, resume: Resume | None = None
) -> list[str]:
    """Resume runs left in flight by dead instances, or mark them ``interrupted`` keeping their
    partial answer.

    With ``resume``, each such run is claimed first (another instance recovering at the same
    time leaves it to this one, or this one to it), then resumed when it can go on. The partial
    answer of a run that cannot is appended as a last :class:`~reasonloop.events.Answer` with
    ``stop_reason="interrupted"``, so streams of the run end like any other. Runs of an
    instance for which ``wait_for(instance)`` is true are left for a later call (their events
    are not all in the store yet).

    The turn of a run that ends here (its question and the answer, partial or whole) is added to
    its conversation as a finished run's would be, unless the conversation has it already.

    Returns:
        The ids of the runs marked interrupted (those resumed are in ``resume.resumed``).
    """
    marked: list[str] = []
    # Not this instance's own runs: they are alive, and reading them all (every few seconds, with
    # thousands streaming) would cost more than the rest of recovery together.
    for record in await store.inflight_runs(exclude_instance=me):
        if wait_for is not None and wait_for(record.instance):
            continue
        if await store.instance_alive(record.instance):
            continue
        dead = record.instance
        if resume is not None and not await resume.claim(record):
            continue  # another instance is recovering it
        try:
            if await _recover(store, record, resume):
                marked.append(record.run_id)
        except BaseException:
            if resume is not None:  # claimed, not recovered: left for a later round, here or elsewhere
                await resume.release(record, dead)
            raise
    return marked


async def _recover(store: RunStore, record: RunRecord, resume: Resume | None) -> bool:
    """End or resume one run of a dead instance; True when it was marked interrupted here."""
    events = await store.events(record.run_id)
    if events and is_terminal_event(events[-1]):  # it ended, but died before saying so
        fields = ended_fields(events[-1], events)
        await store.update_run(record.run_id, **fields)
        await restore_turn(store, record, fields["content"], fields["status"], fields["ended_at"])
        return False
    if resume is not None and await resume.start(record, events):
        return False
    content = partial_content(events)
    last = events[-1].seq if events else record.last_seq
    final = number(Answer(run_id=record.run_id, text=content, stop_reason="interrupted"), last + 1)
    try:
        await store.append_event(record.run_id, final)
    except ValueError:  # another instance recovered it first
        return False
    await store.update_run(
        record.run_id,
        status="interrupted",
        content=content,
        last_seq=last + 1,
        stop_reason="interrupted",
        ended_at=final.ts,
    )
    await restore_turn(store, record, content, "interrupted", final.ts)
    return True


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
