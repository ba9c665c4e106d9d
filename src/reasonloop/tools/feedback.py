"""Feedback on answers: a SQLite store, the guidance it yields, and the ``feedback`` tool.

Judgements (``good``/``bad`` plus an optional reason) are kept per user and conversation.
They arrive from a run (the model calls ``feedback`` when the user judges an answer) or from
outside one (a thumbs-down in a UI through the API, the CLI) — both land in the same
:class:`FeedbackStore`. :meth:`FeedbackStore.recent_guidance` turns the latest judgements
into a paragraph for the next system prompt, e.g. *"2 of the last 3 answers were judged
bad. Reasons: 'imprecise'; 'no sources'. Avoid these problems..."*.

Example::

    store = FeedbackStore("feedback.sqlite")
    await store.add("ann", "conv-1", "bad", "imprecise: quote sources")
    prompt_extra = await store.recent_guidance("ann", "conv-1")
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from reasonloop.config import Settings
from reasonloop.errors import ToolUnavailable
from reasonloop.registry import PluginInfo
from reasonloop.tools.base import Tool, ToolContext, ToolOutput

__all__ = ["Feedback", "FeedbackStore", "FeedbackTool", "Rating"]

Rating = Literal["good", "bad"]
MAX_REASON_CHARS = 500

_SCHEMA = """
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    user TEXT NOT NULL,
    conversation TEXT NOT NULL,
    run_id TEXT NOT NULL DEFAULT '',
    rating TEXT NOT NULL CHECK (rating IN ('good', 'bad')),
    reason TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS feedback_user ON feedback (user, created);
"""


class Feedback(BaseModel):
    """One judgement of an answer."""

    id: int
    user: str
    conversation: str
    run_id: str = ""
    rating: Rating
    reason: str = ""
    created: float
    """Unix seconds."""


class FeedbackStore:
    """Judgements in a SQLite file (``":memory:"`` for a throwaway store).

    Safe to share between tasks and threads: calls run in a worker thread under a lock.

    Args:
        path: SQLite file; parent directories are created.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: Settings) -> FeedbackStore:
        """The store ``[tools.feedback] path`` names (default ``<kb.path>/feedback.sqlite``)."""
        path = settings.tools.feedback.path or str(Path(settings.kb.path) / "feedback.sqlite")
        return cls(path)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    async def add(self, user: str, conversation: str, rating: Rating, reason: str = "", run_id: str = "") -> Feedback:
        """Record a judgement.

        Raises:
            ValueError: ``rating`` is not ``good`` or ``bad``.
        """
        if rating not in ("good", "bad"):
            raise ValueError(f"rating must be 'good' or 'bad', not {rating!r}")
        reason = " ".join((reason or "").split())[:MAX_REASON_CHARS]
        created = time.time()

        def insert() -> int:
            with self._lock, self._db:
                cursor = self._db.execute(
                    "INSERT INTO feedback (user, conversation, run_id, rating, reason, created) VALUES (?, ?, ?, ?, ?, ?)",
                    (user, conversation, run_id, rating, reason, created),
                )
                return int(cursor.lastrowid or 0)

        row_id = await asyncio.to_thread(insert)
        return Feedback(
            id=row_id,
            user=user,
            conversation=conversation,
            run_id=run_id,
            rating=rating,
            reason=reason,
            created=created,
        )

    async def recent(self, user: str, conversation: str | None = None, limit: int = 5) -> list[Feedback]:
        """The latest judgements of ``user``, newest first: this conversation's first, then others'."""

        def select() -> list[tuple]:
            with self._lock:
                return self._db.execute(
                    "SELECT id, user, conversation, run_id, rating, reason, created FROM feedback WHERE user = ? "
                    "ORDER BY (conversation = ?) DESC, created DESC, id DESC LIMIT ?",
                    (user, conversation or "", max(0, limit)),
                ).fetchall()

        rows = await asyncio.to_thread(select)
        keys = ("id", "user", "conversation", "run_id", "rating", "reason", "created")
        return [Feedback(**dict(zip(keys, row, strict=True))) for row in rows]

    async def recent_guidance(self, user: str, conversation: str | None = None, limit: int = 5) -> str:
        """Guidance for a system prompt from the latest judgements ("" when there are none)."""
        return guidance(await self.recent(user, conversation, limit))


def guidance(items: list[Feedback]) -> str:
    """A short paragraph telling the model what recent judgements said."""
    if not items:
        return ""
    bad = [f for f in items if f.rating == "bad"]
    good = [f for f in items if f.rating == "good"]
    lines = [f"Feedback from this user: {len(bad)} of the last {len(items)} answers were judged bad."]
    bad_reasons = list(dict.fromkeys(f.reason for f in bad if f.reason))
    good_reasons = list(dict.fromkeys(f.reason for f in good if f.reason))
    if bad_reasons:
        lines.append("Reasons given for bad answers: " + "; ".join(repr(r) for r in bad_reasons) + ".")
        lines.append("Avoid these problems in this answer.")
    elif bad:
        lines.append("No reason was given; be careful, precise and cite sources.")
    if good_reasons:
        lines.append(
            "Reasons given for good answers: " + "; ".join(repr(r) for r in good_reasons) + ". Keep doing that."
        )
    return " ".join(lines)


class FeedbackParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rating: Annotated[Rating, Field(description="'good' or 'bad': the user's judgement of the previous answer.")]
    reason: Annotated[str | None, Field(default=None, description="Why, in the user's words.")] = None


class FeedbackTool(Tool):
    """Record the user's judgement of an answer.

    Needs ``ctx.scope.feedback`` (a :class:`FeedbackStore`); the user and conversation come
    from ``ctx.scope.user`` and ``ctx.scope.conversation``.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("tool", "feedback")
    name = "feedback"
    description = (
        "Record the user's judgement of your previous answer when they say it was good or bad "
        "(e.g. 'that was wrong', 'great, thanks'). Include their reason if they gave one."
    )
    Params = FeedbackParams

    async def run(self, params: FeedbackParams, ctx: ToolContext) -> ToolOutput:
        store = ctx.scope.feedback
        if not isinstance(store, FeedbackStore):
            raise ToolUnavailable("feedback: no feedback store is configured for this run")
        user = ctx.scope.user
        conversation = ctx.scope.conversation
        item = await store.add(user, conversation, params.rating, params.reason or "", run_id=ctx.run_id)
        text = f"Recorded: the answer was judged {item.rating}" + (f" ({item.reason})." if item.reason else ".")
        return ToolOutput(text=text, data=item.model_dump())
