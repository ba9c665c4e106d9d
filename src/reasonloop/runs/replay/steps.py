"""One run's step journal: what its finished model and tool calls returned, by key.

A step's key is its kind, a digest of what was asked (the model's request, or the tool and its
arguments) and how many identical asks came before it in the run: ``llm:<digest>:0``. Keys come
from content, not from the order of the run's steps, so steps that run side by side (ReWOO's
plan steps, parallel sub-agents) find their own replies whichever finishes first on the replay.
Two identical asks are interchangeable: whichever is made first on the replay gets the first
reply.

The journal lives in the run store while the run is in flight (see
:attr:`~reasonloop.runs.stores.protocol.StoreFeatures.step_journal`); the run's request is kept
under :data:`REQUEST_KEY`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from typing import Any

from reasonloop.errors import RunStoreUnavailable
from reasonloop.runs.stores.protocol import RunStore

__all__ = ["REQUEST_KEY", "StepJournal", "digest"]

log = logging.getLogger(__name__)

REQUEST_KEY = "request"
"""The step under which a run's :class:`~reasonloop.runs.models.RunRequest` is kept (its JSON)."""


def digest(content: Any) -> str:
    """A digest of JSON-like ``content`` (keys sorted, so dicts built in another order agree)."""
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class StepJournal:
    """The finished steps of one run: those recorded before (when it resumes) and those it records.

    Args:
        store: The run store (one whose features include ``step_journal``).
        run_id: The run.
        steps: The steps recorded by the run's earlier process, by key (empty for a new run).
    """

    def __init__(self, store: RunStore, run_id: str, steps: dict[str, str] | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.steps = dict(steps or {})
        self.steps.pop(REQUEST_KEY, None)
        self._asked: dict[str, int] = {}
        self._writing: set[asyncio.Future[None]] = set()
        self.replayed = 0
        """Steps answered from the journal instead of being done."""

    def key(self, kind: str, content: Any) -> str:
        """The key of the next step of ``kind`` asking ``content`` (counted: call once per step)."""
        ask = f"{kind}:{digest(content)}"
        n = self._asked.get(ask, 0)
        self._asked[ask] = n + 1
        return f"{ask}:{n}"

    def take(self, key: str) -> str | None:
        """What step ``key`` returned when it was done before, if it was (each key is asked once:
        the journal lets go of it)."""
        return self.steps.pop(key, None)

    def unreadable(self, key: str, problem: str) -> None:
        """A recorded step that cannot be read: it is done again (and recorded anew)."""
        log.warning("run %s: step %s is recorded but unreadable (%s); doing it again", self.run_id, key, problem)

    def keep(self, key: str, value: str) -> None:
        """Record a finished step, without waiting for the store: the run goes on at once.

        The write goes to the store at once (the SQLite store commits it with the events of the
        same moment). Waiting for it would not make the step safer (a process dying between the
        step's end and the commit loses it either way, and the resumed run does it again) and
        would hold the run for a commit after every call. A store that cannot take it costs the
        run nothing but the chance to skip the step if it resumes.
        """
        write = asyncio.ensure_future(self._write(key, value))
        self._writing.add(write)
        write.add_done_callback(self._writing.discard)

    async def _write(self, key: str, value: str) -> None:
        try:
            await self.store.put_step(self.run_id, key, value)  # type: ignore[attr-defined]
        except RunStoreUnavailable as exc:
            log.warning("run %s: step %s not recorded: %s", self.run_id, key, exc.message)
        except Exception:  # nobody awaits this write: say what went wrong
            log.exception("run %s: step %s not recorded", self.run_id, key)

    async def flush(self) -> None:
        """Until the steps recorded so far are written (or failed)."""
        while self._writing:
            await asyncio.gather(*self._writing)
