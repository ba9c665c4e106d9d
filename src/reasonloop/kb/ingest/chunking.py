"""Token-sized chunks with overlap that break at paragraphs, then sentences, then words.

A document's text is cut into *units*: paragraphs (blank-line separated) when they fit the
budget, otherwise their sentences (English ``. ! ?`` followed by a space, Chinese
``。！？；`` anywhere), otherwise word runs, otherwise fixed character windows. Units are
packed greedily into chunks of at most ``chunk_tokens`` tokens; a new chunk starts with the
trailing units of the previous one worth up to ``overlap_tokens``. Every chunk is an exact
slice of the document text, so its ``start``/``end`` character offsets cite the original;
:meth:`Chunker.split_pages` cuts a paged document page by page, with offsets in its page.

Example::

    chunker = Chunker(chunk_tokens=200, overlap_tokens=30)
    for chunk in chunker.split(text, pages=[(0, 1), (1840, 2)]):
        print(chunk.start, chunk.end, chunk.page, chunk.text[:40])
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from reasonloop.tokens import count_tokens

__all__ = ["Chunk", "Chunker", "sentence_spans"]

_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")
# A sentence ends after Western terminators (plus closing quotes/brackets) followed by space,
# after Chinese terminators (no space needed), or at a line break.
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|[。！？；]+[”’」』）)]*|\n")
_WORD = re.compile(r"\S+\s*")


@dataclass(frozen=True, slots=True)
class Chunk:
    """One slice of a document: ``text == document_text[start:end]``."""

    ordinal: int
    text: str
    start: int
    end: int
    page: int | None
    tokens: int


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text[start:end]`` (whitespace trimmed)."""
    end = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    pos = start
    for m in _SENTENCE_END.finditer(text, start, end):
        _append_trimmed(text, pos, m.end(), spans)
        pos = m.end()
    _append_trimmed(text, pos, end, spans)
    return spans


def _append_trimmed(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        out.append((start, end))


class Chunker:
    """Split text into overlapping, token-bounded chunks.

    Args:
        chunk_tokens: Largest chunk, in tokens as counted by :func:`reasonloop.tokens.count_tokens`.
        overlap_tokens: How much of the previous chunk's tail a chunk repeats (0 disables).

    Raises:
        ValueError: ``chunk_tokens`` < 16 or ``overlap_tokens`` not below half of it.
    """

    def __init__(self, chunk_tokens: int = 200, overlap_tokens: int = 30) -> None:
        if chunk_tokens < 16:
            raise ValueError(f"chunk_tokens must be at least 16, got {chunk_tokens!r}")
        if not 0 <= overlap_tokens < chunk_tokens // 2:
            raise ValueError(f"overlap_tokens must be in [0, chunk_tokens/2), got {overlap_tokens!r}")
        self.chunk_tokens = chunk_tokens
        self.overlap_tokens = overlap_tokens

    @property
    def signature(self) -> str:
        """Identifies the chunking parameters (part of a document's content hash)."""
        return f"chunker/v2/{self.chunk_tokens}/{self.overlap_tokens}"

    def split(self, text: str, pages: Sequence[tuple[int, int]] | None = None) -> list[Chunk]:
        """Chunks of ``text``.

        Args:
            text: The whole document text.
            pages: ``(start_offset, page_number)`` pairs in offset order; a chunk takes the page
                its first character falls on. ``None`` when the format has no pages.
        """
        units = self._units(text)
        if not units:
            return []
        page_starts = [p[0] for p in pages] if pages else []
        chunks: list[Chunk] = []
        current: list[tuple[int, int, int]] = []
        current_tokens = 0
        fresh = 0  # units in `current` that are not overlap carried from the previous chunk
        for unit in units:
            if current and current_tokens + unit[2] > self.chunk_tokens:
                if fresh:
                    chunks.append(self._make(text, current, len(chunks), pages, page_starts))
                current, current_tokens = self._overlap_tail(current, unit[2])
                fresh = 0
            current.append(unit)
            current_tokens += unit[2]
            fresh += 1
        if fresh:
            chunks.append(self._make(text, current, len(chunks), pages, page_starts))
        return chunks

    def split_pages(self, pages: Sequence[tuple[int, str]]) -> list[Chunk]:
        """Chunks of a paged document, each page cut on its own: a chunk never spans two pages,
        and its ``start``/``end`` are offsets in its page's text (``page_text[start:end] == text``).

        Args:
            pages: ``(page_number, page_text)`` in order.
        """
        out: list[Chunk] = []
        for number, page_text in pages:
            for c in self.split(page_text):
                out.append(Chunk(len(out), c.text, c.start, c.end, number, c.tokens))
        return out

    def _overlap_tail(self, units: list[tuple[int, int, int]], incoming: int) -> tuple[list[tuple[int, int, int]], int]:
        budget = min(self.overlap_tokens, self.chunk_tokens - incoming)
        tail: list[tuple[int, int, int]] = []
        total = 0
        for unit in reversed(units):
            if total + unit[2] > budget:
                break
            tail.append(unit)
            total += unit[2]
        tail.reverse()
        return tail, total

    @staticmethod
    def _make(
        text: str,
        units: list[tuple[int, int, int]],
        ordinal: int,
        pages: Sequence[tuple[int, int]] | None,
        page_starts: list[int],
    ) -> Chunk:
        start, end = units[0][0], units[-1][1]
        page = None
        if pages:
            i = bisect.bisect_right(page_starts, start) - 1
            page = pages[max(i, 0)][1]
        body = text[start:end]
        return Chunk(ordinal=ordinal, text=body, start=start, end=end, page=page, tokens=count_tokens(body))

    def _units(self, text: str) -> list[tuple[int, int, int]]:
        """``(start, end, tokens)`` pieces no bigger than the budget, in order."""
        units: list[tuple[int, int, int]] = []
        pos = 0
        paragraphs: list[tuple[int, int]] = []
        for m in _PARAGRAPH_BREAK.finditer(text):
            _append_trimmed(text, pos, m.start(), paragraphs)
            pos = m.end()
        _append_trimmed(text, pos, len(text), paragraphs)
        for p_start, p_end in paragraphs:
            tokens = count_tokens(text[p_start:p_end])
            if tokens <= self.chunk_tokens:
                units.append((p_start, p_end, tokens))
                continue
            for s_start, s_end in sentence_spans(text, p_start, p_end):
                tokens = count_tokens(text[s_start:s_end])
                if tokens <= self.chunk_tokens:
                    units.append((s_start, s_end, tokens))
                else:
                    units.extend(self._split_long(text, s_start, s_end))
        return units

    def _split_long(self, text: str, start: int, end: int) -> list[tuple[int, int, int]]:
        """A sentence over budget: runs of words, and fixed windows for a word over budget."""
        out: list[tuple[int, int, int]] = []
        run_start, run_tokens, run_end = start, 0, start
        for m in _WORD.finditer(text, start, end):
            tokens = count_tokens(m.group())
            if tokens > self.chunk_tokens:
                if run_end > run_start:
                    out.append((run_start, run_end, run_tokens))
                out.extend(self._windows(text, m.start(), m.end()))
                run_start, run_tokens, run_end = m.end(), 0, m.end()
                continue
            if run_tokens + tokens > self.chunk_tokens and run_end > run_start:
                out.append((run_start, run_end, run_tokens))
                run_start, run_tokens = m.start(), 0
            run_tokens += tokens
            run_end = m.end()
        if run_end > run_start:
            out.append((run_start, run_end, run_tokens))
        return [(s, e - (len(text[s:e]) - len(text[s:e].rstrip())), t) for s, e, t in out]

    def _windows(self, text: str, start: int, end: int) -> list[tuple[int, int, int]]:
        out: list[tuple[int, int, int]] = []
        pos = start
        while pos < end:
            # CJK costs about a token per character; shrink the window until it fits.
            size = min(self.chunk_tokens, end - pos)
            while size > 1 and count_tokens(text[pos : pos + size]) > self.chunk_tokens:
                size = max(1, size * 3 // 4)
            out.append((pos, pos + size, count_tokens(text[pos : pos + size])))
            pos += size
        return out
