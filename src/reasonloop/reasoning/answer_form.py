"""The form a question's answer takes: a short span, a sentence, yes or no, or one of named options.

A model that follows instructions reads the form from the question by itself; a small base model
does not, so the grounded answer (:mod:`reasonloop.reasoning.grounded`) asks for it here and
constrains what it keeps: ``yes``/``no`` for a yes/no question, one of the options a choice
question names ("Who was born first, Emma Bull or Virginia Woolf?"), a sentence for how/why.

For a choice that compares dates ("born first", "released more recently") the years written in
the evidence about each option decide, when both are found (:func:`compare_years`).

The forms are read from English questions; a Chinese question is a span or an open question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "AnswerForm",
    "answer_form",
    "compare_years",
    "is_open_question",
    "option_words",
    "predicate_words",
    "stems",
    "year_of",
]

FormKind = Literal["span", "open", "yes_no", "choice"]

_OPEN = re.compile(
    r"^\s*(how(?!\s+(much|many|old|long|far|big|tall|often|large|high|deep|few)\b)|why|explain|describe)\b"
    r"|为什么|如何|怎么|怎样|为何",
    re.I,
)
_YES_NO = re.compile(r"^\s*(is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\b", re.I)
_ASKS_CHOICE = re.compile(
    r"^\s*((in|on|at|of|for|from|by|with)\s+)?(which|who|whom|whose|what|where|when|is|are|was|were|do|does|did|has|have|had)\b",
    re.I,
)
# "…, A or B?" / "…: A or B" / "…, A or B, …": the options sit between punctuation.
_PUNCTUATED = re.compile(r"[,:]\s*(?P<a>[^,:?]+?)\s+or\s+(?P<b>[^,?]+?)\s*(?:[,?]|$)")
_ARTICLE = re.compile(r"^(the|a|an)\s+", re.I)
_CONNECTORS = {
    *("of", "the", "and", "&", "on", "in"),
    *("de", "da", "del", "di", "du", "des", "la", "le", "von", "van", "der", "al", "ul", "ibn", "bin", "y"),
}
_FUNCTION_WORDS = {
    *("to", "a", "an", "be", "is", "are", "was", "were", "it", "not", "so", "for", "as", "at", "by"),
    *("more", "less", "fewer", "else", "other", "others", "both", "neither", "either", "never", "later"),
}
_MAX_OPTION_WORDS = 8
_WORD = re.compile(r"\w+")
_YEAR = re.compile(r"(?<!\d)(1[0-9]{3}|20[0-9]{2})(?!\d)")
# Comparatives that compare dates by themselves, and those ("first", "last") that do only beside
# a verb of dates ("born first"; not "the first to climb it").
_EARLIER = re.compile(r"\b(earlier|earliest|older|oldest)\b", re.I)
_LATER = re.compile(r"\b(more recent(ly)?|most recent(ly)?|newer|newest|younger|youngest)\b", re.I)
_EARLIER_IF_DATED = re.compile(r"\b(first|before|sooner)\b", re.I)
_LATER_IF_DATED = re.compile(r"\b(later|latest|last)\b", re.I)
_DATED = re.compile(
    r"\b(born|died|death|passed away|released|published|founded|formed|established|created|built|opened"
    r"|started|began|begun|launched|premiered|aired|came out|produced|made|written|decided|occurred|fought)\b",
    re.I,
)
_DIED = re.compile(r"\b(died|death|passed away)\b", re.I)
_RANGE = re.compile(r"\(([^()]*)\)")


def is_open_question(question: str) -> bool:
    """A how/why question, answered with a sentence rather than a span."""
    return bool(_OPEN.search(question))


@dataclass(frozen=True)
class AnswerForm:
    kind: FormKind
    options: tuple[str, ...] = ()
    """The named options of a ``choice``, as the question writes them (leading article dropped);
    for a ``yes_no`` question about two named things ("Are X and Y both magazines?"), those two."""


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
        if not a_words and not b_words:  # "a left-hand or right-hand batsman": the adjacent words
            a_words, b_words = before[-1:], after[:1]
            if any(w.lower() in _CONNECTORS or w.lower() in _FUNCTION_WORDS for w in a_words + b_words):
                return None
        a, b = _option(" ".join(a_words)), _option(" ".join(b_words))
    if not a or not b or a.lower() == b.lower():
        return None
    if max(len(a.split()), len(b.split())) > _MAX_OPTION_WORDS:
        return None
    return a, b


def answer_form(question: str) -> AnswerForm:
    """What kind of answer ``question`` asks for."""
    if is_open_question(question):
        return AnswerForm("open")
    options = _choice_options(question)
    if options:
        return AnswerForm("choice", options)
    if _YES_NO.search(question):
        return AnswerForm("yes_no", _pair(question))
    return AnswerForm("span")


def _pair(question: str) -> tuple[str, ...]:
    """The two named things of "Are (both) X and Y (both) …?" (empty when there are not two)."""
    words = re.sub(r"[\"“”,?]", " ", question).split()[1:]
    if words[:1] and words[0].lower() == "both":
        words = words[1:]
    if "and" not in words:
        return ()
    at = words.index("and")
    first = _run_before(words[:at])
    second = _run_after(words[at + 1 :])
    if len(first) != len(words[:at]) and not (words[:1] and _ARTICLE.match(words[0] + " ")):
        return ()  # "Is the plan cheap and fast?": no named thing before "and"
    if not first or not second or max(len(first), len(second)) > _MAX_OPTION_WORDS:
        return ()
    return _option(" ".join(first)), _option(" ".join(second))


def option_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` that identify it (one-letter words dropped)."""
    return {w.lower() for w in _WORD.findall(text) if len(w) > 1}


_STOP = {
    *("the", "a", "an", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "as", "into"),
    *("is", "are", "was", "were", "be", "been", "do", "does", "did", "has", "have", "had", "can", "could"),
    *("which", "who", "whom", "whose", "what", "where", "when", "both", "also", "either", "same", "than"),
    *("will", "would", "should", "it", "its", "their", "his", "her", "they", "one", "that", "this", "these"),
    *("considered", "known", "called", "named", "type", "types", "kind", "example", "examples"),
}


def stems(text: str) -> set[str]:
    """Rough stems of the content words of ``text`` (lower case, five letters at most)."""
    return {w.lower().rstrip("s")[:5] for w in _WORD.findall(text) if w.lower() not in _STOP and len(w) > 1}


def predicate_words(question: str, names: tuple[str, ...]) -> set[str]:
    """What ``question`` says of its named things: its content stems, less the names'."""
    said = stems(question)
    for name in names:
        said -= stems(name)
    return said


def year_of(text: str, *, died: bool = False) -> int | None:
    """The year ``text`` gives first (for ``died``, the second year of its first parenthesis
    holding two, the ``(born – died)`` of a lead sentence)."""
    if died:
        for inside in _RANGE.findall(text):
            years = _YEAR.findall(inside)
            if len(years) > 1:
                return int(years[1])
        return None
    first = _YEAR.search(text)
    return int(first[1]) if first else None


def compare_years(question: str, dated: dict[str, str]) -> tuple[str, dict[str, int]] | None:
    """For a question that compares dates, the option whose evidence gives the earlier or later
    year as the question asks, with the years read; ``None`` when the question does not compare
    dates or a year is missing or tied. ``dated`` maps each option to the text written about it."""
    dated_verb = bool(_DATED.search(question))
    later = bool(_LATER.search(question) or (dated_verb and _LATER_IF_DATED.search(question)))
    earlier = bool(_EARLIER.search(question) or (dated_verb and _EARLIER_IF_DATED.search(question)))
    if later == earlier:  # neither, or both ("whose last album came out earlier"): not a plain comparison
        return None
    died = bool(_DIED.search(question))
    years = {option: year_of(text, died=died) for option, text in dated.items()}
    found = {o: y for o, y in years.items() if y is not None}
    if len(found) < 2 or len(found) < len(years) or len(set(found.values())) < len(found):
        return None
    pick = (max if later else min)(found, key=found.__getitem__)
    return pick, found
