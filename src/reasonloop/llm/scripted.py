"""A provider that replays a recorded list of replies, for deterministic runs and tests.

Each reply is a string (a text reply) or ``{"tool_calls": [{"name", "arguments"}], "text"?}``
(a tool-call reply). Requests are recorded in :attr:`ScriptedProvider.prompts` (the most
recent :data:`RECORDED_REQUESTS`, so a server on a script stays the same size however long it
runs), so a test can assert what the model was shown. ``stop`` sequences and ``max_tokens`` are
honoured like a real server would: the text is cut before the first stop string, and at the
token limit (estimated as :func:`~reasonloop.tokens.count_tokens` does), which ends the reply
with ``finish_reason`` ``length``.

It can also score continuations (:meth:`LLM.score`), for deterministic tests of what decides by
likelihood: given ``scores``, a list of ``{continuation: log-probability}`` tables taken one per
:meth:`ScriptedProvider.score` call (or a function ``(prompt, continuations) -> scores``), it
reports :attr:`Capabilities.scores_continuations` and records each call in
:attr:`ScriptedProvider.scored`. An empty continuation scores 0.0 unless its table says otherwise.

From the CLI: ``--llm scripted:replies.json``. The file holds a JSON list of replies, or an object
``{"replies": [...], "scores": [{"continuation": logprob, ...}, ...]}`` (either key may be left out).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from reasonloop.config import LLMSettings
from reasonloop.errors import ConfigError, LLMBadResponse, LLMNotSupported
from reasonloop.llm.base import (
    LLM,
    Capabilities,
    ChatRequest,
    Done,
    LLMChunk,
    Message,
    TextDelta,
    ToolCallDelta,
)
from reasonloop.tokens import count_tokens, trim_to_tokens

__all__ = ["RECORDED_REQUESTS", "ScriptExhausted", "ScriptedProvider"]

Reply = str | dict[str, Any]
Scores = Sequence[Mapping[str, float]] | Callable[[str, list[str]], Sequence[float]]
"""Scripted scores: one ``{continuation: log-probability}`` table per :meth:`ScriptedProvider.score`
call, or a function ``(prompt, continuations) -> scores``."""

RECORDED_REQUESTS = 1000
"""Requests a provider remembers (prompt, tools, stop sequences); older ones are let go."""


class ScriptExhausted(LLMBadResponse):
    code = "llm.script_exhausted"


class ScriptedProvider(LLM):
    """Replays replies in order.

    Args:
        replies: The replies, or a function ``(messages, tools) -> reply`` called per request.
        settings: ``model`` may name a JSON file of replies (as with ``scripted:PATH``).
        chunk_size: Characters per streamed text delta (small values exercise streaming).
        delay_s: Pause before each delta, to simulate a model's pace.
        first_delay_s: Extra pause before the first delta (a model's time to first token).
        repeat_last: Keep answering with the last reply (and the last scores table) when the script
            runs out.
        base_model: Report itself as a base model (:attr:`Capabilities.base_model`).
        scores: What :meth:`score` answers (see :data:`Scores`); without them (and without
            ``scores`` in the file) the model cannot score continuations, like a chat model.
    """

    id: ClassVar[str] = "scripted"
    description: ClassVar[str] = "Replays a JSON list of replies and records the prompts (tests, reproducible runs)"

    def __init__(
        self,
        settings: LLMSettings | None = None,
        *,
        replies: Sequence[Reply] | Callable[[list[Message], list[Any] | None], Reply] | None = None,
        chunk_size: int = 8,
        delay_s: float = 0.0,
        first_delay_s: float = 0.0,
        repeat_last: bool = False,
        native_tools: bool = True,
        base_model: bool = False,
        scores: Scores | None = None,
    ) -> None:
        super().__init__(settings or LLMSettings(provider="scripted", max_retries=0))
        if replies is None:
            replies, from_file = self._load(self.settings.model)
            scores = scores if scores is not None else from_file
        self._fn = replies if callable(replies) else None
        self.replies: list[Reply] = [] if callable(replies) else list(replies)
        self.prompts: deque[list[Message]] = deque(maxlen=RECORDED_REQUESTS)
        self.tools_seen: deque[list[Any] | None] = deque(maxlen=RECORDED_REQUESTS)
        self.stops_seen: deque[list[str] | None] = deque(maxlen=RECORDED_REQUESTS)
        self.sampling_seen: deque[tuple[int | None, float | None]] = deque(maxlen=RECORDED_REQUESTS)
        """``(max_tokens, temperature)`` of each request."""
        self.requests = 0
        """Requests served so far (the records above keep only the most recent)."""
        self.chunk_size = max(1, chunk_size)
        self.delay_s = delay_s
        self.first_delay_s = first_delay_s
        self.repeat_last = repeat_last
        self._native_tools = native_tools
        self._base_model = base_model
        self._next = 0
        self._score_fn = scores if callable(scores) else None
        self.scores: list[Mapping[str, float]] | None = None if scores is None or callable(scores) else list(scores)
        self._next_score = 0
        self.scored: deque[tuple[str, list[str]]] = deque(maxlen=RECORDED_REQUESTS)
        """``(prompt, continuations)`` of each :meth:`score` call."""

    @staticmethod
    def _load(path: str) -> tuple[list[Reply], list[dict[str, float]] | None]:
        """The replies and the scores (``None``: none given) of a script file."""
        if not path:
            raise ConfigError("the scripted provider needs replies: use --llm scripted:PATH.json")
        file = Path(path)
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"scripted replies file not found: {file}") from exc
        except json.JSONDecodeError as exc:
            raise ConfigError(f"scripted replies file {file} is not JSON: {exc}") from exc
        shape = (
            f"scripted replies file {file} must hold a JSON list of strings and objects, or an object with "
            '"replies" (that list) and "scores" (a list of objects mapping continuations to numbers)'
        )
        scores = None
        if isinstance(data, dict):
            if not data or set(data) - {"replies", "scores"}:
                raise ConfigError(shape)
            scores = data.get("scores")
            data = data.get("replies", [])
            if not isinstance(scores, list | None) or not all(_is_score_table(t) for t in scores or []):
                raise ConfigError(shape)
        if not isinstance(data, list) or not all(isinstance(r, str | dict) for r in data):
            raise ConfigError(shape)
        return data, scores

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(
            native_tools=self._native_tools,
            parallel_tools=self._native_tools,
            base_model=self._base_model,
            scores_continuations=self.scores is not None or self._score_fn is not None,
        )

    async def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """The scripted scores of ``continuations`` (the next table, or the scores function's answer).

        Raises:
            LLMNotSupported: no scores were given.
            ScriptExhausted: the tables have run out (``repeat_last`` keeps using the last one).
            LLMBadResponse: a table has no score for one of the continuations, or the function
                returned the wrong number of scores.
        """
        candidates = list(continuations)
        self.scored.append((prompt, candidates))
        if self._score_fn is not None:
            values = [float(v) for v in self._score_fn(prompt, candidates)]
            if len(values) != len(candidates):
                raise LLMBadResponse(
                    f"the scores function returned {len(values)} scores for {len(candidates)} continuations"
                )
            return values
        if self.scores is None:
            raise LLMNotSupported(
                f'{self.name} was given no scores: pass scores=... or add "scores" to the script', provider=self.id
            )
        table = self._score_table()
        missing = [c for c in candidates if c and c not in table]
        if missing:
            raise LLMBadResponse(f"scripted scores table {dict(table)!r} has no score for {missing[0]!r}")
        return [float(table.get(c, 0.0)) for c in candidates]

    def _score_table(self) -> Mapping[str, float]:
        assert self.scores is not None
        if self._next_score >= len(self.scores):
            if self.repeat_last and self.scores:
                return self.scores[-1]
            raise ScriptExhausted(
                f"scripted model has no scores left (it had {len(self.scores)}); add tables to its scores"
            )
        table = self.scores[self._next_score]
        self._next_score += 1
        return table

    @property
    def remaining(self) -> int:
        return max(0, len(self.replies) - self._next)

    def _reply(self, request: ChatRequest) -> Reply:
        if self._fn is not None:
            return self._fn(request.messages, request.tools)
        if self._next >= len(self.replies):
            if self.repeat_last and self.replies:
                return self.replies[-1]
            raise ScriptExhausted(
                f"scripted model has no reply left (it had {len(self.replies)}); add replies to the script"
            )
        reply = self.replies[self._next]
        self._next += 1
        return reply

    async def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        self.requests += 1
        self.prompts.append(list(request.messages))  # messages are frozen: sharing them is safe
        self.tools_seen.append(list(request.tools) if request.tools else None)
        self.stops_seen.append(request.stop)
        self.sampling_seen.append((request.max_tokens, request.temperature))
        reply = self._reply(request)
        text = reply if isinstance(reply, str) else str(reply.get("text") or reply.get("content") or "")
        finish = "stop"
        if request.stop:
            cuts = [text.find(s) for s in request.stop if s and s in text]
            if cuts:
                text = text[: min(cuts)]
        if request.max_tokens is not None and count_tokens(text) > request.max_tokens:
            text, finish = trim_to_tokens(text, request.max_tokens, marker=""), "length"
        if self.first_delay_s:
            await asyncio.sleep(self.first_delay_s)
        for i in range(0, len(text), self.chunk_size):
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            yield TextDelta(text[i : i + self.chunk_size])
        if isinstance(reply, dict):
            for index, call in enumerate(reply.get("tool_calls") or []):
                finish = "tool_calls"
                args = call.get("arguments", {})
                yield ToolCallDelta(
                    index=index,
                    id=call.get("id") or f"call_{self.requests}_{index}",
                    name=call.get("name", ""),
                    arguments=args if isinstance(args, str) else json.dumps(args, ensure_ascii=False),
                )
        yield Done(finish_reason=finish)


def _is_score_table(table: Any) -> bool:
    return isinstance(table, dict) and all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in table.values()
    )
