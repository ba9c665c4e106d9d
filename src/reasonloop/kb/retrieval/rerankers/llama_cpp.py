"""The ``llama_cpp`` reranker: a local GGUF reranker model, fully offline.

A cross-encoder reranker converted to GGUF (a bge-reranker, for one) is opened by llama-cpp-python
in ranking mode (``embedding=True``, rank pooling): the model's classification head then gives
one relevance score per input sequence, read as the first value of that sequence's output. Each
candidate is scored as the pair ``query``/``document`` joined by ``separator`` as text:
llama-cpp-python's ``embed`` tokenises plain text, so the pair does not get the model's special
separator tokens the way llama.cpp's own server builds it, and scores can differ from that server's
(the order is what counts here). The model file is
the user's (``model_path``); nothing is downloaded. It is opened on first use and scored in a
worker thread, one call at a time (a llama.cpp context is not shared between threads).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from reasonloop.errors import ConfigError
from reasonloop.kb.retrieval.rerankers.base import RerankScores
from reasonloop.registry import PluginInfo

__all__ = ["LlamaCppReranker", "LlamaCppRerankerOptions"]


class LlamaCppRerankerOptions(BaseModel):
    """The ``[kb.options.reranker]`` table of ``id = "llama_cpp"``."""

    model_config = ConfigDict(extra="forbid")

    model_path: str = Field(min_length=1)
    """The GGUF reranker model file."""
    n_ctx: int = Field(default=2048, ge=64)
    """Context length; a pair longer than the batch is truncated."""
    n_threads: int | None = Field(default=None, ge=1)
    separator: str = "\n"
    """What joins the query and a document into the pair the model scores."""


class LlamaCppReranker:
    """Scores candidates with a local GGUF reranker through llama-cpp-python.

    Args:
        options: :class:`LlamaCppRerankerOptions` or its table.
        llama_factory: What opens the model (default ``llama_cpp.Llama``), called with keyword arguments.

    Raises:
        ConfigError: invalid options, or the model file does not exist.
    """

    info: ClassVar[PluginInfo] = PluginInfo.declared("reranker", "llama_cpp")

    def __init__(self, options: Mapping[str, Any] | LlamaCppRerankerOptions, *, llama_factory: Any = None) -> None:
        try:
            self.options = (
                options if isinstance(options, LlamaCppRerankerOptions) else LlamaCppRerankerOptions(**options)
            )
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ConfigError(f"invalid llama_cpp reranker options: {problems}") from None
        self.path = Path(self.options.model_path).expanduser()
        if not self.path.is_file():
            raise ConfigError(f"llama_cpp reranker: no model file at {self.path}")
        self.name = f"llama_cpp:{self.path.stem}"
        self._factory = llama_factory
        self._model: Any = None
        self._lock = threading.Lock()

    def _open(self) -> Any:
        if self._model is None:
            factory = self._factory
            if factory is None:
                from llama_cpp import Llama  # the [local] extra; imported when a model is first needed

                factory = Llama
            import llama_cpp

            self._model = factory(
                model_path=str(self.path),
                embedding=True,
                pooling_type=llama_cpp.LLAMA_POOLING_TYPE_RANK,
                n_ctx=self.options.n_ctx,
                n_batch=self.options.n_ctx,
                n_ubatch=self.options.n_ctx,
                n_threads=self.options.n_threads or max(1, (os.cpu_count() or 2) - 1),
                verbose=False,
            )
        return self._model

    def _score(self, query: str, texts: Sequence[str]) -> list[float]:
        with self._lock:
            model = self._open()
            pairs = [f"{query}{self.options.separator}{text}" for text in texts]
            outputs = model.embed(pairs, normalize=False, truncate=True)
        return [float(out[0]) for out in outputs]

    async def score(self, query: str, texts: Sequence[str]) -> RerankScores:
        """One score per text (the model's relevance logit)."""
        return RerankScores(await asyncio.to_thread(self._score, query, texts))

    async def aclose(self) -> None:
        model, self._model = self._model, None
        if model is not None and hasattr(model, "close"):
            await asyncio.to_thread(model.close)
