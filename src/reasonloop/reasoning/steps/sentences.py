"""The sentences of retrieved passages, each with its place on the page, ranked against the question.

An answer from evidence rests on sentences, not on whole passages: the quote a citation shows is
one of these, with its offsets in the text of its page (a passage's ``start`` plus the sentence's
offset inside it), so ``page_text[start:end] == text`` holds by construction. The knowledge base's
embedder ranks them (word overlap without one).

Not candidates: Markdown headings, code fences and questions (a FAQ's own question is the sentence
most similar to the user's question, and never its answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reasonloop.events import Citation
from reasonloop.kb.base import Hit
from reasonloop.reasoning.steps.terms import QuestionTerms

__all__ = ["Sentence", "quoting", "rank_sentences", "sentence_units", "sentences_of"]

_BULLET = re.compile(r"^(?:[-*+•]\s+|\d{1,3}[.)]\s+|>\s*)+")
_HEADING = re.compile(r"^#{1,6}\s|^[=\-_*]{3,}$|^```|^~~~")
_QUESTION = re.compile(r"[?？][\"'”’)\]」』）]*$")
_WORDS = re.compile(r"[\u3400-\u9fff]|\w+")


@dataclass
class Sentence:
    """One sentence of a numbered passage."""

    text: str
    marker: int
    """The passage's evidence number (``[n]``)."""
    hit: Hit
    start: int
    """Offset of the sentence in its passage's text."""
    end: int
    score: float = 0.0

    def citation(self, base: Citation | None) -> Citation:
        """The passage's citation narrowed to this sentence (offsets on the page when the passage has them)."""
        return quoting(base or self.hit.citation(marker=self.marker), self.hit, self.start, self.end)


def quoting(citation: Citation, hit: Hit, start: int, end: int) -> Citation:
    """A copy of ``citation`` quoting ``hit.text[start:end]``, with the quote's offsets on the page
    and its passage's range (``page_text[start:end] == quote`` when the passage has offsets)."""
    cited = citation.model_copy()
    chunk_start = hit.metadata.get("start")
    cited.quote = hit.text[start:end]
    cited.chunk_start, cited.chunk_end = chunk_start, hit.metadata.get("end")
    if isinstance(chunk_start, int):
        cited.start, cited.end = chunk_start + start, chunk_start + end
    else:
        cited.start = cited.end = None
    return cited


_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|[。！？；]+[”’」』）)]*")
_BLOCK_START = re.compile(r"^\s*(?:[-*+•]\s|\d{1,3}[.)]\s|#{1,6}\s|\||>|```|~~~|$)")


def _blocks(text: str) -> list[tuple[int, int]]:
    """Paragraphs, list items, headings and table rows of ``text``: lines wrapped inside a
    paragraph are joined, so a sentence that runs over a line break stays whole."""
    blocks: list[tuple[int, int]] = []
    start = pos = 0
    lines = text.split("\n")
    for i, line in enumerate(lines):
        end = pos + len(line)
        following = lines[i + 1] if i + 1 < len(lines) else ""
        standalone = bool(re.match(r"^\s*(?:#{1,6}\s|\|)", line)) or not line.strip()
        if i + 1 == len(lines) or standalone or _BLOCK_START.match(following):
            blocks.append((start, end))
            start = end + 1
        pos = end + 1
    return blocks


def sentence_units(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (whitespace trimmed), wrapped lines joined."""
    spans: list[tuple[int, int]] = []
    for a, b in _blocks(text):
        pos = a
        for m in _SENTENCE_END.finditer(text, a, b):
            spans.append(_trimmed(text, pos, m.end()))
            pos = m.end()
        spans.append(_trimmed(text, pos, b))
    return [(x, y) for x, y in spans if x < y]


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def sentences_of(shown: Sequence[tuple[Hit, int]]) -> list[Sentence]:
    """The candidate sentences of the numbered passages, in passage order."""
    out: list[Sentence] = []
    for hit, marker in shown:
        text = hit.text
        for a, b in sentence_units(text):
            piece = text[a:b]
            if _HEADING.search(piece) or _QUESTION.search(piece):
                continue
            bullet = _BULLET.match(piece)
            if bullet:  # the list marker is not part of what the document says
                a += bullet.end()
                piece = text[a:b]
            if len(_WORDS.findall(piece)) < 2:
                continue
            out.append(Sentence(piece, marker, hit, a, b))
    return out


async def rank_sentences(
    query: str, terms: QuestionTerms, sentences: list[Sentence], retrievers: Sequence[object]
) -> list[Sentence]:
    """``sentences`` most similar to ``query`` first (the embedder's cosine, with the share of the
    question's words in the sentence and its passage's title breaking near-ties; that share alone
    without an embedder)."""
    if not sentences:
        return []
    scores = None
    for retriever in retrievers:
        similarity = getattr(retriever, "similarity", None)
        if similarity is not None:
            scores = await similarity(query, [s.text for s in sentences])
            if scores is not None:
                break
    for i, s in enumerate(sentences):
        # the passage's title is the sentence's context ("It weighs 1.2 kg" under "X200 handbook")
        s.score = (scores[i] if scores else 0.0) + 0.1 * terms.coverage(f"{s.hit.title} {s.text}")
    return sorted(sentences, key=lambda s: -s.score)
