"""The ``http`` reranker: a rerank endpoint over HTTP.

Two wire formats cover the servers people run:

* ``tei`` — Hugging Face Text Embeddings Inference: ``POST {base_url}/rerank`` with
  ``{"query", "texts"}``, answered by ``[{"index", "score"}, ...]``;
* ``v1`` — the Jina / Cohere / vLLM shape: ``POST {base_url}/v1/rerank`` (``/rerank`` when
  ``base_url`` already ends in ``/v1``) with ``{"model", "query", "documents"}``, answered by
  ``{"results": [{"index", "relevance_score"}, ...]}`` and, from some, token usage.

Failures are classified as the model providers classify theirs (:mod:`reasonloop.llm.http_errors`):
rate limits, 5xx, timeouts and refused connections are retried with the same backoff (Retry-After
honoured), the rest fail at once. The key, if any, is read from the variable ``api_key_env``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasonloop.config import secret
from reasonloop.errors import ConfigError, LLMBadResponse, LLMError, LLMNotConfigured
from reasonloop.kb.retrieval.rerankers.base import RerankScores
from reasonloop.llm.http_errors import backoff_delay, describe, error_for_status, transport_error
from reasonloop.registry import PluginInfo

__all__ = ["HTTPReranker", "HTTPRerankerOptions"]


class HTTPRerankerOptions(BaseModel):
    """The ``[kb.options.reranker]`` table of ``id = "http"``."""

    model_config = ConfigDict(extra="forbid")

    base_url: str = Field(min_length=1)
    format: Literal["tei", "v1"] = "v1"
    model: str = ""
    """Model name sent in ``v1`` requests (TEI serves one model and ignores it)."""
    api_key_env: str = ""
    """Variable holding the API key, sent as ``Authorization: Bearer``; empty sends none."""
    timeout_s: float = Field(default=30.0, gt=0)
    connect_timeout_s: float = Field(default=5.0, gt=0)
    max_retries: int = Field(default=2, ge=0)
    backoff_base_s: float = Field(default=0.5, ge=0)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def parse_scores(payload: Any, wire: str, n: int) -> tuple[list[float], int]:
    """``(one score per text, tokens the server reports)`` from a rerank response.

    Raises:
        LLMBadResponse: the payload is not the format's shape, or does not score every text once.
    """
    items: Any = payload
    tokens = 0
    if wire == "v1":
        if not isinstance(payload, Mapping) or not isinstance(payload.get("results"), list):
            raise LLMBadResponse(f"rerank: expected {{'results': [...]}}, got {describe(payload)}")
        items = payload["results"]
        usage = payload.get("usage")
        if isinstance(usage, Mapping):
            tokens = int(_float(usage.get("total_tokens", usage.get("prompt_tokens"))) or 0)
    if not isinstance(items, list):
        raise LLMBadResponse(f"rerank: expected a list of scores, got {describe(payload)}")
    key = "relevance_score" if wire == "v1" else "score"
    scores: list[float | None] = [None] * n
    for item in items:
        index = item.get("index") if isinstance(item, Mapping) else None
        score = _float(item.get(key)) if isinstance(item, Mapping) else None
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < n or score is None:
            raise LLMBadResponse(f"rerank: malformed result {describe(item)}")
        scores[index] = score
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        raise LLMBadResponse(f"rerank: {len(missing)} of {n} candidates got no score")
    return [s for s in scores if s is not None], tokens


class HTTPReranker:
    """Scores candidates on a rerank endpoint (TEI or the ``/v1/rerank`` shape).

    Args:
        options: :class:`HTTPRerankerOptions` or its table.

    Raises:
        ConfigError: invalid options.
        LLMNotConfigured: ``api_key_env`` names a variable that is unset.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("reranker", "http")

    def __init__(self, options: Mapping[str, Any] | HTTPRerankerOptions) -> None:
        try:
            self.options = options if isinstance(options, HTTPRerankerOptions) else HTTPRerankerOptions(**options)
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"invalid http reranker options: {problems}") from None
        o = self.options
        headers = {}
        if o.api_key_env:
            key = secret(o.api_key_env)
            if key is None:
                raise LLMNotConfigured(
                    f"http reranker: the API key variable {o.api_key_env} is not set", variable=o.api_key_env
                )
            headers["Authorization"] = f"Bearer {key}"
        base = o.base_url.rstrip("/")
        if o.format == "tei":
            self.url = base + "/rerank"
        else:
            self.url = base + ("/rerank" if base.endswith("/v1") else "/v1/rerank")
        self.name = f"http:{o.model}" if o.model else f"http:{o.format}"
        self._client = httpx.AsyncClient(
            headers=headers, timeout=httpx.Timeout(o.timeout_s, connect=o.connect_timeout_s)
        )

    def _body(self, query: str, texts: Sequence[str]) -> dict[str, Any]:
        if self.options.format == "tei":
            return {"query": query, "texts": list(texts), "truncate": True}
        body: dict[str, Any] = {"query": query, "documents": list(texts), "top_n": len(texts)}
        if self.options.model:
            body["model"] = self.options.model
        return body

    async def _once(self, body: dict[str, Any], n: int) -> tuple[list[float], int]:
        try:
            response = await self._client.post(self.url, json=body)
        except httpx.HTTPError as exc:
            error = transport_error(exc, provider="rerank", streaming=False)
            raise (error or LLMBadResponse(f"rerank: {exc}")) from exc
        if response.status_code >= 400:
            raise error_for_status(
                response.status_code, response.text[:300], provider="rerank", headers=response.headers
            )
        try:
            payload = response.json()
        except ValueError as exc:
            raise LLMBadResponse(f"rerank: the answer is not JSON: {describe(response.text)}") from exc
        return parse_scores(payload, self.options.format, n)

    async def score(self, query: str, texts: Sequence[str]) -> RerankScores:
        """One score per text; retryable failures are retried ``max_retries`` times.

        Raises:
            LLMError: the endpoint failed (the last error after the retries).
        """
        body = self._body(query, texts)
        attempt = 1
        while True:
            try:
                scores, tokens = await self._once(body, len(texts))
                return RerankScores(scores, prompt_tokens=tokens, calls=attempt)
            except LLMError as error:
                if not error.retryable or attempt > self.options.max_retries:
                    if attempt > 1:
                        error.details["attempts"] = attempt
                    raise
                await asyncio.sleep(backoff_delay(attempt, error, base_s=self.options.backoff_base_s))
                attempt += 1

    async def aclose(self) -> None:
        await self._client.aclose()
