"""The form a question's answer takes: a short span, a passage to quote, yes or no, or one of named options.

A model that follows instructions reads the form from the question by itself; a base model does
not, so the evidence answer reads it here: ``yes_no`` ("Does the X200 support Linux?", "是否支持…？"),
``choice`` between two named options ("Which is cheaper, the X200 or the X300?", "A还是B？"),
``open`` for how/why questions (answered by quoting), else ``span``.

Only the form is read here; what the answer is comes from the evidence
(:mod:`reasonloop.reasoning.evidence_answer.decision`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["AnswerForm", "answer_form", "is_open_question", "option_words"]

FormKind = Literal["span", "open", "yes_no", "choice"]

_OPEN = re.compile(
    r"^\s*(how(?!\s+(much|many|old|long|far|big|tall|often|large|high|deep|few|soon)\b)|why|explain|describe)\b"
    r"|为什么|如何|怎么|怎样|为何",
    re.I,
)
_YES_NO = re.compile(
    r"^\s*(is|are|was|were|do|does|did|has|have|had|can|could|will|would|should|shall|may|must|isn't|aren't"
    r"|doesn't|don't|didn't|can't|won't)\b",
    re.I,
)
_YES_NO_ZH = re.compile(r"是否|能否|可否|是不是|能不能|会不会|可不可以|有没有|对不对|[吗嘛][\s？?。]*$")
_ASKS_CHOICE = re.compile(
    r"^\s*((in|on|at|of|for|from|by|with)\s+)?(which|who|whom|whose|what|where|when|is|are|was|were|do|does|did"
    r"|has|have|had|should|can|could|would|will)\b",
    re.I,
)
# "…, A or B?" / "…: A or B" / "…, A or B, …": the options sit between punctuation.
_PUNCTUATED = re.compile(r"[,:]\s*(?P<a>[^,:?]+?)\s+or\s+(?P<b>[^,?]+?)\s*(?:[,?]|$)")
_CHOICE_ZH = re.compile(r"(?:^|[，,：:是选])(?P<a>[^，,：:？?]{1,20}?)还是(?P<b>[^，,：:？?]{1,20}?)[？?。]*$")
_ARTICLE = re.compile(r"^(the|a|an)\s+", re.I)
_CONNECTORS = {"of", "the", "and", "&", "on", "in", "de", "la", "le", "von", "van", "der", "da", "di", "du"}
_FUNCTION_WORDS = {
    *("to", "a", "an", "be", "is", "are", "was", "were", "it", "not", "so", "for", "as", "at", "by"),
    *("more", "less", "fewer", "else", "other", "others", "both", "neither", "either", "never", "later"),
}
_MAX_OPTION_WORDS = 8
_WORD = re.compile(r"\w+")


def is_open_question(question: str) -> bool:
    """A how/why question, answered with the passage's own sentences rather than a span."""
    return bool(_OPEN.search(question))


@dataclass(frozen=True)
class AnswerForm:
    kind: FormKind
    options: tuple[str, ...] = ()
    """The two named options of a ``choice``, as the question writes them (leading article dropped)."""


def _option(text: str) -> str:
    return _ARTICLE.sub("", " ".join(text.split())).strip(" \"'“”,;:")


def _capitalised(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit() or word[:1] in "\"'“"


def _run_before(words: list[str]) -> list[str]:
    """The trailing run of capitalised words (with connectors inside it) of ``words``."""
    run: list[str] = []
    for word in reversed(words):
        if _capitalised(word) or (run and word.lower() in _CONNECTORS):
            run.insert(0, word)
        else:
            break
    while run and run[0].lower() in _CONNECTORS:
        run.pop(0)
    return run


def _run_after(words: list[str]) -> list[str]:
    run: list[str] = []
    for word in words[1:] if words[:1] and _ARTICLE.match(words[0] + " ") else words:
        if _capitalised(word) or (run and word.lower() in _CONNECTORS):
            run.append(word)
        else:
            break
    while run and run[-1].lower() in _CONNECTORS:
        run.pop()
    return run


def _choice_options(question: str) -> tuple[str, str] | None:
    q = re.sub(r" ?(?:--|—) ?", ", ", " ".join(question.split()))
    if q.count(" or ") != 1 or not _ASKS_CHOICE.search(q):  # "A or B or C": not two options
        return None
    m = _PUNCTUATED.search(q)
    if m:
        a, b = _option(m["a"]), _option(m["b"])
    else:
        left, _, right = q.rstrip(" ?").rpartition(" or ")
        before, after = left.split()[1:], right.split()  # the question's first word is capitalised anyway
        a_words, b_words = _run_before(before), _run_after(after)
        if not a_words and not b_words:  # "a monthly or yearly plan": the adjacent words
            a_words, b_words = before[-1:], after[:1]
            if any(w.lower() in _CONNECTORS or w.lower() in _FUNCTION_WORDS for w in a_words + b_words):
                return None
        a, b = _option(" ".join(a_words)), _option(" ".join(b_words))
    if not a or not b or a.lower() == b.lower():
        return None
    if max(len(a.split()), len(b.split())) > _MAX_OPTION_WORDS:
        return None
    return a, b


def _choice_options_zh(question: str) -> tuple[str, str] | None:
    m = _CHOICE_ZH.search(question.strip())
    if m is None or question.count("还是") != 1:
        return None
    a, b = m["a"].strip(), m["b"].strip()
    return (a, b) if a and b and a != b else None


def answer_form(question: str) -> AnswerForm:
    """What kind of answer ``question`` asks for (English or Chinese)."""
    if is_open_question(question):
        return AnswerForm("open")
    options = _choice_options(question) or _choice_options_zh(question)
    if options:
        return AnswerForm("choice", options)
    if _YES_NO.search(question) or _YES_NO_ZH.search(question):
        return AnswerForm("yes_no")
    return AnswerForm("span")


def option_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` that identify it (one-letter words dropped)."""
    return {w.lower() for w in _WORD.findall(text) if len(w) > 1}
