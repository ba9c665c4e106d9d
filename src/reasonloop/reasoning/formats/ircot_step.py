"""One step of interleaved reasoning (IRCoT): the next sentence of a chain of thought, or its answer.

A model asked for *one* next sentence writes many things: the sentence alone; a label before it
(``Next sentence:``, ``Thought:``, ``Step 2:``, ``下一句：``, a bullet, bold, or the prompt's own
labels echoed: ``Question:``, ``Reasoning so far:``); the reasoning so far
again before the new sentence; several sentences; or the answer, ``So the answer is: X`` and the
forms small models use (``Therefore, the answer is X.``, ``Answer: X``, ``**Final answer:** X``,
``所以答案是：X``, ``答案：X``). :func:`parse_step` reads the first sentence that is not already in the
chain, as the IRCoT paper keeps only the first generated sentence (what follows it was written
without the retrieval the sentence triggers). When that sentence holds the answer marker, the answer
is the rest of its line (or the next line, when the marker ends its line). A reply with no new
sentence is :attr:`IRCoTStep.empty`; nothing here raises on a model's text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["IRCoTStep", "answer_of", "parse_step", "same_sentence"]

_LABEL = re.compile(
    r"^(?:(?:[-*+•>]|\d{1,2}[.)、])\s*)?(?:\*\*|__)?\s*"
    r"(?:(?:next|new)\s+sentence|sentence|reasoning(?:\s+(?:step|so\s+far))?|thought|step\s*\d*|cot|reply|question"
    r"|passages|下一句|已有推理|推理|思考|第\s*\d+\s*步|回复|问题|段落)"
    r"\s*(?:\*\*|__)?\s*[:：]\s*(?:\*\*|__)?\s*",
    re.I,
)
_BULLET = re.compile(r"^(?:[-*+•>]\s+|\d{1,2}[.)、]\s+)")
_ANSWER = re.compile(
    r"(?P<conn>\b(?:so|thus|therefore|hence)\b[,，\s]*)?\b(?:the\s+)?(?:final\s+)?answer(?:\s+is\b|\s*(?=[:：]))"
    r"(?:\s*(?:\*\*|__))?\s*[:：]?(?:\s*(?:\*\*|__))?\s*",
    re.I,
)
_ANSWER_ZH = re.compile(
    r"(?P<conn>(?:所以|因此|故|那么|综上)[，,\s]*)?(?:最终)?答案(?:是|为|[:：])(?:\*\*)?\s*[:：]?(?:\*\*)?\s*"
)
_MARKER_ONLY = re.compile(r"^(?:\s*[\[【]\^?\d{1,3}(?:\s*[,，、]\s*\d{1,3})*[\]】])+\s*[.。]?$")
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s)|[。！？]+[”’」』）)]*")
"""Where a sentence of a line ends (an abbreviation's period before a letter, "D.C.", is no end)."""
_WIDE_END = re.compile(r"[\u3000-\u9fff\uff1a]$")
"""A marker ending in a Chinese character or a full-width colon: the answer follows without a space."""
_EDGE = "\"'“”‘’「」*_ \t"


@dataclass(frozen=True, slots=True)
class IRCoTStep:
    """What one reply adds to the chain."""

    sentence: str = ""
    """The new reasoning sentence (the answer sentence, when it is one); empty when there is none."""
    answer: str | None = None
    """The answer the sentence gives (``X`` of ``So the answer is: X``), markers kept; ``None``
    when the sentence gives none."""

    @property
    def empty(self) -> bool:
        """The reply adds no sentence (empty, only labels, or only sentences already written)."""
        return not self.sentence


def same_sentence(a: str, b: str) -> bool:
    """True when two sentences say the same words (case, spacing and trailing marks aside)."""
    return _key(a) == _key(b)


def _key(text: str) -> str:
    return " ".join(re.sub(r"[\[【]\^?\d{1,3}[\]】]", " ", text).casefold().strip(" .。!！?？").split())


def _sentences(line: str) -> list[tuple[int, int]]:
    """Spans of the sentences of one line (blank ones left out)."""
    ends = [m.end() for m in _SENTENCE_END.finditer(line)]
    spans = zip([0, *ends], [*ends, len(line)], strict=True)
    return [(a, b) for a, b in spans if line[a:b].strip()]


def _clean(line: str) -> str:
    line = line.strip()
    while True:
        stripped = _BULLET.sub("", _LABEL.sub("", line)).strip()
        if stripped == line:
            return line
        line = stripped


def _trim_answer(text: str) -> str:
    text = text.strip().strip(_EDGE).strip()
    if text.endswith(("。", "！")) or (text.endswith(".") and not re.search(r"\b[A-Z]\.$", text)):
        text = text[:-1].rstrip()
    return text.strip(_EDGE).strip()


def _marker(sentence: str) -> re.Match[str] | None:
    """The answer marker of ``sentence``: at its start, or after a connective ("…, so the answer is X")."""
    head = len(sentence) - len(sentence.lstrip(_EDGE))
    for pattern in (_ANSWER, _ANSWER_ZH):
        for m in pattern.finditer(sentence):
            if m.group("conn") or m.start() <= head:
                return m
    return None


def answer_of(text: str) -> str | None:
    """The answer ``text`` gives after an answer marker (``None`` without one; ``""`` when nothing
    follows the marker)."""
    m = _marker(text)
    return None if m is None else _trim_answer(text[m.end() :])


def parse_step(reply: str, written: Sequence[str] = ()) -> IRCoTStep:
    """The first sentence of ``reply`` not among ``written`` (the chain so far), and its answer.

    Args:
        reply: The model's text.
        written: The sentences of the chain so far (repeats of them are skipped).
    """
    lines = [_clean(line) for line in reply.replace("\r\n", "\n").split("\n")]
    lines = [line for line in lines if line.strip(_EDGE)]
    for i, line in enumerate(lines):
        spans = _sentences(line)
        for k, (a, b) in enumerate(spans):
            sentence = _clean(line[a:b])
            if not sentence.strip(_EDGE) or _MARKER_ONLY.match(sentence):
                continue
            # markers written after the sentence's full stop belong to it: "... Audio. [1]"
            if k + 1 < len(spans) and _MARKER_ONLY.match(line[spans[k + 1][0] : spans[k + 1][1]]):
                sentence = f"{sentence} {line[spans[k + 1][0] : spans[k + 1][1]].strip()}"
            if any(same_sentence(sentence, w) for w in written):
                continue
            m = _marker(sentence)
            if m is None:
                return IRCoTStep(sentence.replace("**", "").strip())
            # the answer runs to the end of the line ("Dr. Smith" is no sentence end), or is the
            # next line when the marker ends this one
            rest = line[line.index(sentence[: m.end()]) + m.end() :] if sentence[: m.end()] in line else ""
            answer = _trim_answer(rest)
            if not answer and i + 1 < len(lines):
                answer = _trim_answer(lines[i + 1])
            if not answer:
                return IRCoTStep()  # the marker with nothing after it: no answer, no sentence
            head = sentence[: m.end()].strip()
            gap = "" if _WIDE_END.search(head) else " "
            said = f"{head}{gap}{answer}".replace("**", "")
            return IRCoTStep(said, answer)
    return IRCoTStep()
