"""The ``[runs]`` section of the configuration: where runs are recorded, how many run at once, and
how a run in flight survives its server. Re-exported by :mod:`reasonloop.config`, which most code
imports it from."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from reasonloop.config.tools import Section

__all__ = ["RunsSettings"]


class RunsSettings(Section):
    """Where runs are recorded and how many run at once."""

    store: str = "sqlite"
    """Run store id: ``sqlite`` (one file, one machine) or ``redis`` (several server instances)."""
    sqlite_path: str = ""
    """SQLite file; empty means ``runs.sqlite`` under ``[kb] path``."""
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_prefix: str = "reasonloop:"
    """Prefix of every Redis key, so several deployments can share one Redis."""
    redis_max_connections: int = Field(default=128, ge=1)
    """Connections for commands (appends, status); callers wait for a free one rather than fail.
    Blocking reads of followers on other instances use their own connections."""
    ttl_s: int = Field(default=7 * 24 * 3600, gt=0)
    """How long a finished run, its events and a conversation are kept in Redis."""
    max_concurrent: int = Field(default=16, ge=1)
    """Runs executing at once in one server process; more wait in the queue."""
    max_queued: int = Field(default=1000, ge=0)
    """Runs allowed to wait; beyond that a start is refused with ``run.queue_full``."""
    keep_finished_s: float = Field(default=30.0, ge=0)
    """How long a finished run's events stay in memory for late subscribers (then the store serves them)."""
    stop_wait_s: float = Field(default=5.0, gt=0)
    """How long a stop request waits for a run on another instance to end before answering."""
    journal: bool = True
    """Make each event durable in a local append-only journal before any reader sees it, and
    record it in the store behind, in batches (stores with a local journal directory: SQLite).
    Off: every event is committed to the store before readers see it (one more thread hand-off
    per event between the model and the client)."""
    record_interval_s: float = Field(default=0.1, ge=0, le=5)
    """With the journal, how long events gather before one store transaction records them. The
    SQLite store keeps each run's share of a transaction as one row, so a longer interval means
    fewer, larger rows; readers on other processes sharing the file see events this much later.
    A run's end does not wait for it: its own events are recorded at once, ahead of their batch."""
    resume_interrupted: bool = True
    """When a server instance dies (a crash, kill -9, a lost machine), another one takes over its
    runs in flight and goes on with them from the steps they had finished: each finished model
    and tool call is kept in the store while its run is in flight (and dropped at its end), and
    replayed, not done again (docs/server.md, "What survives a crash"). Off: such runs end
    ``interrupted`` with their partial answer, and nothing is kept for them."""
    writer_priority: Literal["idle", "low"] = "idle"
    """CPU priority of the SQLite store's writer threads (Linux). ``idle``: they run only when the
    event loop's thread does not want the core, so they never delay a socket; best when the server
    has its cores to itself. ``low`` (nice 19): they still get a small share when other busy
    processes want the same cores, so a writer holding the GIL or the database lock is not left
    waiting behind them; ``reasonloop serve --workers N`` uses it unless this is set."""
