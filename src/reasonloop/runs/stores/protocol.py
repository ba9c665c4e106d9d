"""The run store contract: what a store must do, and what it says it can do beyond that.

A run store keeps runs, their events (appended as they happen, addressed by ``seq``),
conversations with their messages, feedback, and carries stop requests between server
instances. Two implementations ship: :class:`~reasonloop.runs.stores.sqlite.store.SQLiteRunStore`
(one file, default) and :class:`~reasonloop.runs.stores.redis.store.RedisRunStore` (scale-out).

A store states its optional abilities in :attr:`RunStore.features` (a :class:`StoreFeatures`);
callers read that, never probe for methods. :func:`append_events`, :func:`update_runs` and
:func:`together` give every caller the fastest path a store's features allow.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from reasonloop._aio import first_step, resume
from reasonloop.events import Event, event_adapter
from reasonloop.runs.models import ConversationRecord, RunRecord
from reasonloop.runs.stores.event_rows import EventRows

__all__ = ["RunStore", "StoreFeatures", "append_events", "features_of", "together", "update_runs"]


@dataclass(frozen=True)
class StoreFeatures:
    """What a run store can do beyond the :class:`RunStore` contract."""

    batch_appends: bool = False
    """``async append_events(rows) -> list[Exception | None]`` records many stamped events at once,
    given as :class:`~reasonloop.runs.stores.event_rows.EventRows` (see :func:`append_events`)."""
    batch_updates: bool = False
    """``async update_runs(updates)`` sets the fields of several records at once (``(run_id,
    fields)`` pairs; see :func:`update_runs`)."""
    continuing_runs: bool = False
    """``async create_continuing_run(record) -> str | None`` records a run that continues its
    conversation only if no other run of the conversation is in flight in any process using the
    store (else it returns that run's id): a conversation then answers one question at a time
    across instances, not only within one."""
    stop_keys: bool = False
    """``async stops_requested(run_ids) -> set[str]`` tells which of the runs have a stop request
    standing, one published before this instance was listening included."""
    commits_together: bool = False
    """Writes started in the same step commit in one transaction (:func:`together`)."""
    local_journal: bool = False
    """The store lives on this machine's disk and names a ``journal_dir`` beside it, where the
    recorder may journal events before the store holds them
    (:mod:`reasonloop.runs.recording.journal`)."""
    rate_buckets: bool = False
    """``async take_token(key, rate, burst) -> float`` takes one token from the bucket ``key``
    (``rate`` tokens a second, at most ``burst``), which every process using the store shares;
    returns 0 when taken, else the seconds until a token is there. Raises
    :class:`~reasonloop.errors.RunStoreUnavailable` when the backend does not answer."""
    step_journal: bool = False
    """A run's finished steps are kept while it is in flight, so that another process can resume it
    without doing them again (:mod:`reasonloop.runs.resume`):

    * ``async put_step(run_id, key, value: str)`` keeps one step (a later put of the key replaces
      it; nothing is kept for a run that has ended);
    * ``async add_step(run_id, key, value) -> bool`` keeps one step only if the run has none of
      that key (and has not ended); of writers adding it at once, exactly one gets True (an
      approval's answer: :mod:`reasonloop.runs.approvals`);
    * ``async steps(run_id, prefix="") -> dict[str, str]`` gives them back (those whose key starts
      with ``prefix``, when given: a waiting approval is looked for without reading every step);
    * ``async claim_run(run_id, instance, by) -> bool`` moves an in-flight run recorded as executed
      by ``instance`` to ``by``: of instances claiming it at once, exactly one gets True.

    The run's end (a terminal status set through ``update_run``) drops its steps."""


def features_of(store: Any) -> StoreFeatures:
    """What ``store`` can do beyond the contract: its ``features``, or none for a store that
    states none (a third-party store written before stores had to)."""
    features = getattr(store, "features", None)
    return features if isinstance(features, StoreFeatures) else _NO_FEATURES


_NO_FEATURES = StoreFeatures()


@runtime_checkable
class RunStore(Protocol):
    """Persistence for runs, events, conversations and stop requests.

    Every method raises :class:`~reasonloop.errors.RunStoreUnavailable` when the backend
    cannot be reached. The optional methods :class:`StoreFeatures` names exist when
    :attr:`features` says so.
    """

    features: StoreFeatures
    """The store's optional abilities."""

    async def open(self) -> None:
        """Connect (and create tables); raises RunStoreUnavailable with the reason."""

    async def close(self) -> None: ...

    async def create_run(self, record: RunRecord) -> None: ...

    async def update_run(self, run_id: str, **fields: Any) -> None:
        """Set fields of a run record (status, content, last_seq, ...)."""

    async def get_run(self, run_id: str) -> RunRecord | None: ...

    async def list_runs(self, tenant: str, limit: int = 50) -> list[RunRecord]:
        """The tenant's most recent runs, newest first."""

    async def inflight_runs(self, exclude_instance: str | None = None) -> list[RunRecord]:
        """Runs recorded as queued, running or awaiting approval, by any instance but ``exclude_instance``."""

    async def append_event(self, run_id: str, event: Event, payload: str | None = None) -> None:
        """Record ``event`` (already stamped; ``payload`` is its JSON when the caller has it).

        A duplicate seq raises ValueError."""

    async def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        """Stored events with ``seq > after_seq``, in order."""

    def follow(self, run_id: str, after_seq: int = 0) -> AsyncIterator[Event]:
        """Stored events after ``after_seq``, then new ones as other instances append them,
        ending after the run's terminal event."""
        ...

    async def request_stop(self, run_id: str) -> None:
        """Ask whichever instance runs ``run_id`` to stop it."""

    def stop_requests(self, instance: str) -> AsyncIterator[str]:
        """Run ids whose stop was requested (through this store) while ``instance`` runs them."""
        ...

    async def heartbeat(self, instance: str) -> None:
        """Tell other instances that ``instance`` is alive."""

    async def instance_alive(self, instance: str) -> bool:
        """Whether ``instance`` has sent a heartbeat recently (same-host pids are checked directly)."""
        ...

    async def create_conversation(self, record: ConversationRecord) -> None: ...

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation with its messages."""

    async def list_conversations(self, tenant: str, limit: int = 50) -> list[ConversationRecord]: ...

    async def add_messages(self, conversation_id: str, messages: list[dict[str, Any]]) -> None: ...

    async def add_turn(self, conversation_id: str, run_id: str, messages: list[dict[str, Any]]) -> bool:
        """Add run ``run_id``'s turn unless the conversation has it; True when added. Atomic:
        instances recovering the same run at once add its turn once."""

    async def rename_conversation(self, conversation_id: str, title: str) -> bool:
        """Give the conversation ``title``; False when there is no such conversation."""
        ...

    async def delete_conversation(self, conversation_id: str) -> bool: ...

    async def add_feedback(self, feedback: dict[str, Any]) -> None: ...


async def append_events(store: RunStore, rows: EventRows) -> list[Exception | None]:
    """Record stamped events given as rows ``(run_id, seq, payload)``, in one call when the store can.

    Rows, not event objects: under load thousands wait for the store at once, and rows kept
    column by column are nothing for the garbage collector to walk (see
    :mod:`reasonloop.runs.stores.event_rows`).

    Returns:
        One entry per item: ``None``, or the ValueError of an event whose seq was taken.

    Raises:
        RunStoreUnavailable: the store could not record them.
    """
    if features_of(store).batch_appends:
        return await store.append_events(rows)  # type: ignore[attr-defined]
    out: list[Exception | None] = []
    for run_id, _, payload in rows:
        try:
            await store.append_event(run_id, event_adapter.validate_json(payload), payload)
            out.append(None)
        except ValueError as exc:
            out.append(exc)
    return out


async def update_runs(store: RunStore, updates: Sequence[tuple[str, dict[str, Any]]]) -> None:
    """Set fields of several runs' records: in one call when the store can (``update_runs``),
    else with one ``update_run`` each, started together."""
    if features_of(store).batch_updates:
        await store.update_runs(updates)  # type: ignore[attr-defined]
    else:
        await together([store.update_run(run_id, **fields) for run_id, fields in updates])


async def together(writes: list[Coroutine[Any, Any, Any]]) -> list[Any]:
    """Await store writes started at once (the SQLite store commits them in one transaction,
    with one thread hand-off), in order; their results, or the first failure once all have ended."""
    started: list[tuple[bool, Any]] = []
    try:
        for write in writes:
            started.append(first_step(write))
    except BaseException:
        for write in writes[len(started) + 1 :]:
            write.close()
        raise
    failure: BaseException | None = None
    results: list[Any] = []
    for done, value in started:
        if not done:
            try:
                value = await resume(*value)
            except Exception as exc:
                failure = failure or exc
        results.append(value)
    if failure is not None:
        raise failure
    return results
