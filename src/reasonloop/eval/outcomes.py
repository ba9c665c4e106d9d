"""Whether an answer is correct, abstained or wrong: the three outcomes of a question.

An answer *abstains* when its run says so (:attr:`reasonloop.events.Answer.abstained`: the
documents do not decide the question). Then:

- an **unanswerable** question (no accepted answer: the documents do not hold one) is
  *correct* when the answer abstained, *wrong* otherwise;
- an **answerable** question is *abstained* when the answer abstained; otherwise *correct*
  when the answer matches, *wrong* when it does not.

An answer *matches* a **yes/no question** (every accepted answer is ``yes`` or ``no``) when the
decision its opening states (:func:`yes_no_of`) is the accepted one; an answer that opens
without a decision does not match. An answer matches any other question when it mentions an
accepted answer (:func:`mentions`), or reaches a token F1 of :data:`SPAN_F1_THRESHOLD` against
one whose numbers it all contains (``30 days`` has an F1 of 0.5 against ``60 days`` but is not
a match).

*Wrong share of answered* is ``wrong / (correct + wrong)``: how often an answer that was not
counted as abstained is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from reasonloop.eval.answer_scores import f1_score
from reasonloop.eval.metrics import normalize_for_matching, strip_citations

__all__ = [
    "NO_PREFIXES",
    "NO_WORDS",
    "OUTCOMES",
    "SPAN_F1_THRESHOLD",
    "UNDECIDED_PREFIXES",
    "YES_PREFIXES",
    "YES_WORDS",
    "Outcome",
    "is_yes_no",
    "mentions",
    "outcome",
    "wrong_share",
    "yes_no_of",
]

Outcome = Literal["correct", "abstained", "wrong"]
OUTCOMES: tuple[Outcome, ...] = ("correct", "abstained", "wrong")

SPAN_F1_THRESHOLD = 0.5
"""A span answer that mentions no accepted answer still matches at this token F1 or above
against an accepted answer, when it contains every number of that answer."""

YES_WORDS = frozenset({"yes", "yeah", "yep"})
NO_WORDS = frozenset({"no", "nope"})
"""English decisions: the answer's first word (a run of Latin letters), case ignored."""

UNDECIDED_PREFIXES = (
    "不确定",
    "不一定",
    "不清楚",
    "不知道",
    "不好说",
    "无法确定",
    "无法判断",
    "无法回答",
    "未提及",
    "未说明",
    "没有提到",
    "没有提及",
    "没有说明",
    "可能",
    "也许",
    "或许",
    "大概",
    "是否",
)
"""Chinese openings that decide nothing, checked first (``不一定`` is not ``不``)."""
NO_PREFIXES = ("不", "否", "没", "未", "无法", "无需", "无须", "并不", "并非", "并没")
YES_PREFIXES = (
    "是",
    "对",
    "能",
    "可",
    "会",
    "有",
    "要",
    "需要",
    "支持",
    "允许",
    "包括",
    "包含",
    "享受",
    "行",
    "当然",
    "确实",
)
"""Chinese decisions: what the answer's first run of Chinese characters starts with."""

_CJK_CHAR = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CJK_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_LATIN_WORD = re.compile(r"[A-Za-z]+")
_LEAD = re.compile(r"^[\s*_>#`~\-\"'“”‘’「」『』]+")
_LABEL = re.compile(r"^(?:final answer|answer|a|答案|答|回答)\s*[:：]", re.I)
_THOUSANDS = re.compile(r"(?<=\d)[,，](?=\d{3}(?!\d))")
_NUMBER = re.compile(r"\d+")


def _opening(text: str) -> str:
    """``text`` without citation markers, leading markup and quotes, and an ``Answer:`` label."""
    text = _LEAD.sub("", strip_citations(text))
    labelled = _LABEL.match(text)
    if labelled:
        text = _LEAD.sub("", text[labelled.end() :])
    return text


def yes_no_of(answer: str) -> Literal["yes", "no"] | None:
    """The decision an answer opens with: ``"yes"``, ``"no"`` or None (it opens with none).

    The opening is the answer without ``[n]`` citation markers, leading white space, markdown
    (``*``, ``_``, ``>``, ``#``, ``-``, backquotes), quotes and a leading label (``Answer:``,
    ``A:``, ``答：``, ``答案：``). When it starts with a Latin letter, its first word decides:
    :data:`YES_WORDS` or :data:`NO_WORDS` (``Yes, ...`` and ``No.`` decide; ``Nobody`` and
    ``Not ...`` do not). When it starts with a Chinese character, the run of Chinese characters
    it starts with decides: none when it starts with one of :data:`UNDECIDED_PREFIXES`, else
    ``no`` for :data:`NO_PREFIXES` (``不``, ``不是``, ``不能``, ``否``, ``没有``, ...), else ``yes``
    for :data:`YES_PREFIXES` (``是``, ``是的``, ``能``, ``可以``, ``有``, ``支持``, ...).
    Anything else (a digit, a name, an empty answer) decides nothing.
    """
    text = _opening(answer)
    if not text:
        return None
    if _CJK_CHAR.match(text):
        run = _CJK_RUN.match(text)
        lead = run.group(0) if run else ""
        if lead.startswith(UNDECIDED_PREFIXES):
            return None
        if lead.startswith(NO_PREFIXES):
            return "no"
        if lead.startswith(YES_PREFIXES):
            return "yes"
        return None
    word = _LATIN_WORD.match(text)
    if word is None:
        return None
    first = word.group(0).lower()
    if first in YES_WORDS:
        return "yes"
    if first in NO_WORDS:
        return "no"
    return None


def is_yes_no(answers: Sequence[str]) -> bool:
    """Every accepted answer is ``yes`` or ``no`` (case and punctuation ignored), and there is one."""
    return bool(answers) and all(normalize_for_matching(a) in ("yes", "no") for a in answers)


def _normal(text: str) -> str:
    return normalize_for_matching(_THOUSANDS.sub("", text))


def _bounded(text: str, start: int, end: int) -> bool:
    def free(ch: str) -> bool:
        return not ch.isalnum() or bool(_CJK_CHAR.match(ch))

    return (start == 0 or free(text[start - 1])) and (end == len(text) or free(text[end]))


def mentions(answer: str, golds: Sequence[str]) -> bool:
    """Some accepted answer occurs in ``answer``.

    Both are normalised as for exact match (lower case, no punctuation, no English articles,
    single spaces) after thousands separators between digits are dropped (``1,799`` is
    ``1799``). An accepted answer with Chinese characters must occur with spaces ignored; any
    other must occur as whole words: not inside a longer word or number (``$29`` is not in
    ``$299``), though Chinese characters may touch it (``699`` is in ``699元``).
    """
    text = _normal(strip_citations(answer))
    squeezed = text.replace(" ", "")
    for gold in golds:
        g = _normal(gold)
        if not g:
            continue
        if _CJK_CHAR.search(g):
            if g.replace(" ", "") in squeezed:
                return True
            continue
        start = text.find(g)
        while start != -1:
            if _bounded(text, start, start + len(g)):
                return True
            start = text.find(g, start + 1)
    return False


def outcome(answers: Sequence[str], answerable: bool, prediction: str, abstained: bool) -> Outcome:
    """The outcome of one answer (module docstring): ``correct``, ``abstained`` or ``wrong``."""
    if not answerable:
        return "correct" if abstained else "wrong"
    if abstained:
        return "abstained"
    if is_yes_no(answers):
        decision = yes_no_of(prediction)
        return (
            "correct" if decision is not None and decision in {normalize_for_matching(a) for a in answers} else "wrong"
        )
    if mentions(prediction, answers):
        return "correct"
    text = strip_citations(prediction)
    numbers = set(_NUMBER.findall(_normal(text)))
    for gold in answers:
        if f1_score(text, gold) >= SPAN_F1_THRESHOLD and set(_NUMBER.findall(_normal(gold))) <= numbers:
            return "correct"
    return "wrong"


def wrong_share(correct: int, wrong: int) -> float | None:
    """``wrong / (correct + wrong)``; None when nothing was answered."""
    return wrong / (correct + wrong) if correct + wrong else None
