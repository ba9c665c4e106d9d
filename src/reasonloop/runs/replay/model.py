"""A run's model with its step journal: a call made before (by the run's earlier process) is replayed.

:class:`JournaledLLM` wraps the model a run reasons with. Each call is keyed by what it asks (the
model, the messages, the tools, stop sequences, ``max_tokens``, ``temperature``, the run's own
sampling) and how many identical calls came before it (:meth:`StepJournal.key`). When the journal
has the key, the recorded reply is given chunk by chunk as the model gave it (text, tool calls,
then its :class:`~reasonloop.llm.base.Done` with the tokens it used and why it finished), and the
model is not called. Otherwise the model is called, and its whole reply is recorded once it has
ended; a reply cut short (a stop, the run's deadline, a failure) is not recorded.

A replayed reply's tokens are counted in the run's usage as they were the first time: the run
did consume them, in its earlier process, and its budgets must decide on the replay as they
decided then, or the replay would take another path.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic import BaseModel

from reasonloop.llm.base import LLM, Capabilities, Done, LLMChunk, Message, TextDelta, ToolCallDelta, ToolSpec
from reasonloop.llm.messages import ChatRequest
from reasonloop.runs.replay._digests import message_digests, spec_digests
from reasonloop.runs.replay.steps import StepJournal

__all__ = ["JournaledLLM", "decode_reply", "encode_chunk"]


def encode_chunk(chunk: LLMChunk) -> list[Any]:
    """A chunk as the journal keeps it (a short JSON array)."""
    if isinstance(chunk, TextDelta):
        return ["t", chunk.text]
    if isinstance(chunk, ToolCallDelta):
        return ["c", chunk.index, chunk.id, chunk.name, chunk.arguments]
    return ["d", chunk.finish_reason, chunk.prompt_tokens, chunk.completion_tokens, chunk.usage_estimated]


def _opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _decode_chunk(item: Any) -> LLMChunk:
    if isinstance(item, list) and item:
        kind = item[0]
        if kind == "t" and len(item) == 2 and isinstance(item[1], str):
            return TextDelta(item[1])
        if (
            kind == "c"
            and len(item) == 5
            and type(item[1]) is int
            and _opt_str(item[2])
            and _opt_str(item[3])
            and isinstance(item[4], str)
        ):
            return ToolCallDelta(item[1], item[2], item[3], item[4])
        if (
            kind == "d"
            and len(item) == 5
            and isinstance(item[1], str)
            and type(item[2]) is int
            and type(item[3]) is int
            and isinstance(item[4], bool)
        ):
            return Done(item[1], item[2], item[3], item[4])
    raise ValueError(f"not a recorded chunk: {str(item)[:80]!r}")


def decode_reply(value: str) -> list[LLMChunk]:
    """The chunks of a recorded reply.

    Raises:
        ValueError: the value is not a recorded reply.
    """
    data = json.loads(value)
    if not isinstance(data, dict) or not isinstance(data.get("chunks"), list):
        raise ValueError("not a recorded reply")
    return [_decode_chunk(item) for item in data["chunks"]]


class JournaledLLM(LLM):
    """``inner`` for one run, its calls answered from the run's :class:`StepJournal` when recorded.

    Closing it does nothing: the wrapped model is its owner's, and serves other runs.
    """

    def __init__(self, inner: LLM, journal: StepJournal) -> None:
        # Not LLM.__init__: the wrapped model's settings, limits and records are the ones that count
        # (its own stream keeps its time limits; a wrapper such as SampledLLM has none of its own).
        self.inner = inner
        self.journal = journal
        self.settings = inner.settings
        self.model = inner.model
        self.calls = inner.calls

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def chosen_by(self) -> str:  # type: ignore[override]
        return self.inner.chosen_by

    def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        return self.inner._stream(request)

    def stream(  # type: ignore[override]
        self,
        messages: Sequence[Message],
        *,
        tools: Sequence[ToolSpec] | None = None,
        stop: Sequence[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[LLMChunk]:
        """The recorded reply of this call, or the wrapped model's (recorded once it has ended)."""
        asked = [
            "stream",
            self.inner.name,
            message_digests(messages),
            spec_digests(tools or ()),
            list(stop or ()),
            max_tokens,
            temperature,
            _sampling(self.inner),
        ]
        key = self.journal.key("llm", asked)
        chunks = self._recorded(key)
        if chunks is not None:
            return _replay(chunks)
        options = {"tools": tools, "stop": stop, "max_tokens": max_tokens, "temperature": temperature}
        # Only what the caller set: a model overriding stream() may not take every keyword.
        options = {name: value for name, value in options.items() if value is not None}
        return self._live(key, self.inner.stream(messages, **options, **kwargs))

    def _recorded(self, key: str) -> list[LLMChunk] | None:
        value = self.journal.take(key)
        if value is None:
            return None
        try:
            chunks = decode_reply(value)
        except ValueError as exc:  # JSONDecodeError is one
            self.journal.unreadable(key, str(exc))
            return None
        self.journal.replayed += 1
        return chunks

    async def _live(self, key: str, stream: AsyncIterator[LLMChunk]) -> AsyncIterator[LLMChunk]:
        recorded: list[list[Any]] = []
        try:
            async for chunk in stream:
                recorded.append(encode_chunk(chunk))
                yield chunk
        finally:  # closed with this one, at once (the wrapped model's connection with it)
            close = getattr(stream, "aclose", None)
            if close is not None:
                await close()
        self.journal.keep(key, json.dumps({"chunks": recorded}, ensure_ascii=False))

    async def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """The recorded scores of this call, or the wrapped model's (then recorded)."""
        key = self.journal.key("score", [self.inner.name, prompt, list(continuations)])
        value = self.journal.take(key)
        if value is not None:
            try:
                scores = json.loads(value)["scores"]
                if not isinstance(scores, list) or len(scores) != len(continuations):
                    raise ValueError("not one score per continuation")
                floats = [float(score) for score in scores]
            except (ValueError, TypeError, KeyError) as exc:
                self.journal.unreadable(key, str(exc))
            else:
                self.journal.replayed += 1
                return floats
        scores = await self.inner.score(prompt, continuations)
        self.journal.keep(key, json.dumps({"scores": list(scores)}))
        return scores

    async def aclose(self) -> None:
        """Nothing to release: the wrapped model is its owner's to close."""


def _sampling(llm: LLM) -> Any:
    """The run's own sampling a wrapped model applies below this one (``SampledLLM``), if any."""
    sampling = getattr(llm, "sampling", None)
    return sampling.model_dump() if isinstance(sampling, BaseModel) else None


async def _replay(chunks: list[LLMChunk]) -> AsyncIterator[LLMChunk]:
    for chunk in chunks:
        yield chunk
