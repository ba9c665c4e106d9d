"""A run's own sampling (``max_tokens``, ``temperature``) over a shared model's settings.

A server keeps one client per configured model for every run, so a caller's request for shorter
or cooler answers cannot change the model's settings. :func:`with_sampling` wraps the model
for one run instead: every call the run makes that does not set these itself gets the run's
values; everything else (the client, retries, usage records, capabilities) is the wrapped
model's own. ``max_tokens`` caps each call of the run, the answer's included.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from reasonloop.llm.base import LLM, Capabilities, ChatRequest, LLMChunk, Message

__all__ = ["SampledLLM", "Sampling", "with_sampling"]


class Sampling(BaseModel):
    """What a caller may set for the model calls of one run (unset: the model's configuration)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int | None = Field(default=None, ge=1)
    """Tokens each model call may generate."""
    temperature: float | None = Field(default=None, ge=0, le=2)

    def is_empty(self) -> bool:
        return self.max_tokens is None and self.temperature is None


class SampledLLM(LLM):
    """``inner`` with a run's :class:`Sampling` as the default of each call.

    Closing it does nothing: the wrapped model belongs to whoever made it and serves other runs.
    """

    def __init__(self, inner: LLM, sampling: Sampling) -> None:
        # Not LLM.__init__: the wrapped model's settings and records are the ones that count.
        self.inner = inner
        self.sampling = sampling
        self.settings = inner.settings
        self.model = inner.model
        self.calls = inner.calls

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    @property
    def name(self) -> str:
        return self.inner.name

    def _stream(self, request: ChatRequest) -> AsyncIterator[LLMChunk]:
        return self.inner._stream(request)

    def stream(  # type: ignore[override]
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[Any]:
        """The wrapped model's stream, with the run's sampling where the call sets none."""
        return self.inner.stream(
            messages,
            max_tokens=max_tokens if max_tokens is not None else self.sampling.max_tokens,
            temperature=temperature if temperature is not None else self.sampling.temperature,
            **kwargs,
        )

    async def score(self, prompt: str, continuations: Sequence[str]) -> list[float]:
        """The inner model's scores: sampling settings do not change a likelihood."""
        return await self.inner.score(prompt, continuations)

    async def aclose(self) -> None:
        """Nothing to release: the wrapped model is its owner's to close."""


def with_sampling(llm: LLM, sampling: Sampling | None) -> LLM:
    """``llm`` itself when ``sampling`` sets nothing, else ``llm`` wrapped with it (never twice)."""
    if sampling is None or sampling.is_empty():
        return llm
    if isinstance(llm, SampledLLM):
        merged = llm.sampling.model_copy(update=sampling.model_dump(exclude_none=True))
        return SampledLLM(llm.inner, merged)
    return SampledLLM(llm, sampling)
