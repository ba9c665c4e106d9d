"""Resuming: a run whose process died goes on in another, from the steps it had finished.

While a run executes, its request and every model and tool call it finishes are kept in the run
store (:mod:`reasonloop.runs.replay`). When its instance dies, recovery
(:mod:`reasonloop.runs.recovery`) finds the run in flight and :class:`Resume` decides:

1. **claim**: the run is moved to this instance in the store (``claim_run``); of instances
   recovering at once, one wins and the others leave the run alone;
2. **resume or not**: a run whose request was kept, whose runner keeps steps and whose strategy
   does not refuse it, and that has not been resumed :data:`MAX_RESUMES` times already, is
   handed to the run manager, which appends a :class:`~reasonloop.events.Resumed` event and
   drives the run again with its journal: the finished calls replay, the rest run for real.
   Any other run ends ``interrupted`` with its partial answer, as before.

What the run's readers already have is not sent again (:mod:`reasonloop.runs.repeats`); the
answer starts over at ``Resumed``.

A call that was running when the process died (not finished, so not kept) runs again: a tool
with side effects may then have them twice.
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from reasonloop.events import Event, Resumed
from reasonloop.runs.execution import Execution
from reasonloop.runs.models import RunRecord, RunRequest, partial_content
from reasonloop.runs.repeats import Repeats
from reasonloop.runs.replay import REQUEST_KEY, StepJournal
from reasonloop.runs.stores.protocol import RunStore

__all__ = ["MAX_RESUMES", "Launch", "Resume", "resumed"]

log = logging.getLogger(__name__)

MAX_RESUMES = 3
"""A run resumed this many times ends ``interrupted`` when its process dies again: a run whose
work kills its process (a step that runs the machine out of memory) must not do so for ever."""

RESUMED_KEPT = 1000
"""How many of the runs it resumed an instance remembers (for its log and its tests)."""

Launch = Callable[[RunRecord, RunRequest, list[Event], dict[str, str]], None]
"""Starts executing a claimed run again: its record, request, stored events and journal."""


class Resume:
    """Claims the runs of dead instances and hands those that can go on to the run manager.

    Args:
        store: The run store (its features include ``step_journal``).
        me: This instance.
        runner: The run manager's runner (it must keep steps; ``resumable(request)`` may refuse).
        launch: Starts executing a claimed run again.
    """

    def __init__(self, store: RunStore, me: str, runner: Any, launch: Launch) -> None:
        self.store = store
        self.me = me
        self.runner = runner
        self.launch = launch
        self.resumed: deque[str] = deque(maxlen=RESUMED_KEPT)
        """The runs this instance resumed (the latest :data:`RESUMED_KEPT`), oldest first."""

    async def claim(self, record: RunRecord) -> bool:
        """Move ``record``'s run from its dead instance to this one; False when another instance
        took it first. The record then names this instance."""
        taken = await self.store.claim_run(record.run_id, record.instance, self.me)  # type: ignore[attr-defined]
        if taken:
            record.instance = self.me
        return bool(taken)

    async def release(self, record: RunRecord, instance: str) -> None:
        """Give a claimed run back to its dead ``instance`` (recovering it failed here): a later
        recovery, by any instance, takes it again."""
        with contextlib.suppress(Exception):
            if await self.store.claim_run(record.run_id, self.me, instance):  # type: ignore[attr-defined]
                record.instance = instance

    async def start(self, record: RunRecord, events: list[Event]) -> bool:
        """Resume the claimed run whose stored events are ``events``; False when it cannot go on
        (it is then to end ``interrupted``)."""
        run_id = record.run_id
        resumes = sum(1 for e in events if isinstance(e, Resumed))
        if resumes >= MAX_RESUMES:
            log.warning("run %s was resumed %d times already: it ends interrupted", run_id, resumes)
            return False
        if any(event.seq != i for i, event in enumerate(events, 1)):
            log.warning("run %s has a gap in its stored events: it ends interrupted", run_id)
            return False
        steps = await self.store.steps(run_id)  # type: ignore[attr-defined]
        raw = steps.get(REQUEST_KEY)
        if raw is None:
            return False  # started without its request kept (resume was off, or it died at once)
        try:
            request = RunRequest.model_validate_json(raw)
        except ValidationError as exc:
            log.warning("run %s: its kept request cannot be read (%s): it ends interrupted", run_id, exc)
            return False
        if request.run_id != run_id:
            log.warning("run %s: its kept request is another run's: it ends interrupted", run_id)
            return False
        resumable = getattr(self.runner, "resumable", None)
        try:
            if resumable is not None and not resumable(request):
                return False
        except Exception:
            log.exception("run %s: could not tell whether it can resume: it ends interrupted", run_id)
            return False
        self.launch(record, request, events, steps)
        self.resumed.append(run_id)
        return True


def resumed(
    store: RunStore, me: str, record: RunRecord, request: RunRequest, events: list[Event], steps: dict[str, str]
) -> Execution:
    """The execution of a run this instance claimed from a dead one: its readers' side holds the
    events stored so far, its journal the steps it had finished, and its first event says it
    resumed (none for a run that died queued, before its first event: it simply starts)."""
    run = Execution.of(record, request)
    run.journal = StepJournal(store, record.run_id, steps)
    if events:
        for event in events:
            run.live.publish(event, event.to_json())
        run.emitted = events[-1].seq
        run.earlier = partial_content(events)
        run.repeats = Repeats(events)
        reused = sum(1 for key in run.journal.steps if not key.startswith("approval:"))  # asks are not steps done
        run.resumed = Resumed(instance=me, reused_steps=reused)
    return run
