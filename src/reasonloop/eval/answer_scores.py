"""Exact match and F1 of an answer against its accepted answers, by the rules of the official scorers.

Two rule sets, chosen per question (:func:`answer_language`): a question is scored by the
Chinese rules when its text or one of its accepted answers holds a Chinese character, by the
English rules otherwise. Each is the behaviour of a published scorer, so that a figure from
``reasonloop eval qa`` can be set beside a published one.

**English: SQuAD v1.1** (``evaluate-v1.1.py``). Normalise: lower case; delete every ASCII
punctuation character (``1,250`` becomes ``1250``, ``U.S.A.`` becomes ``usa``); replace the
words *a*, *an*, *the* by a space; collapse white space. Exact match: the normalised strings are
equal. F1: the normalised strings split at white space, tokens shared counted with their
multiplicity (a bag of words), ``2PR / (P + R)``; 0 when nothing is shared, including when either
side normalises to nothing.

**Chinese: CMRC 2018** (``cmrc2018_evaluate.py``). Lower case and trim. A fixed list of 32 marks
(:data:`CMRC_PUNCTUATION`: the full-width Chinese marks and ``- : _ * ^ / \\ ~ ` + =``) is
deleted; other marks (ASCII ``. , ( ) "``, ``%``) are kept, as the official script keeps them.
Tokens: each character of the basic CJK block (U+4E00..U+9FA5) is a token; the text between them
is split into words. F1: the longest run of tokens the answer and the accepted answer share *in
the same order* (longest common substring over tokens): ``P = run / len(answer)``, ``R = run /
len(accepted)``. Exact match: the two strings equal after lower case, trimming and deleting the
marks of the list (spaces inside count).

One named difference: the official script splits the non-Chinese runs with NLTK's
``word_tokenize``, which first splits the text into sentences with a trained model. reasonloop does
not depend on NLTK: it applies the rules NLTK's word tokenizer applies to one line
(:func:`_latin_words`: quotes, the final period, commas and colons not followed by a digit,
brackets, dashes, possessives and contractions such as ``n't``), without the sentence split (so
a period that ends a sentence inside a run stays on its word) and without the rarer forms NLTK
splits further (``cannot``, ``gonna``).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence
from typing import Literal

__all__ = [
    "CMRC_PUNCTUATION",
    "Language",
    "answer_language",
    "best_exact_match",
    "best_f1",
    "cmrc_exact_text",
    "cmrc_tokens",
    "exact_match",
    "f1_score",
    "normalize_answer",
    "squad_tokens",
]

Language = Literal["en", "zh"]
"""Which rules score a question: ``en`` (SQuAD v1.1) or ``zh`` (CMRC 2018)."""

_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CMRC_HAN = re.compile(r"[\u4e00-\u9fa5]")  # the official script's range, one token per character
_ASCII_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

CMRC_PUNCTUATION = frozenset("-:_*^/\\~`+=，。：？！“”；’《》·、「」（）－～『』")
"""The marks the CMRC 2018 scorer deletes. (Its list also names ``……``, two characters, which it
compares with single characters and so never deletes; the single ``…`` is kept, as there.)"""


def answer_language(question: str, golds: Sequence[str]) -> Language:
    """``zh`` when the question or an accepted answer holds a Chinese character, else ``en``."""
    return "zh" if any(_HAN.search(text) for text in (question, *golds)) else "en"


# -- SQuAD v1.1 ---------------------------------------------------------------------------------
def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower case, ASCII punctuation deleted, *a/an/the* dropped, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _ASCII_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def squad_tokens(text: str) -> list[str]:
    """The tokens SQuAD's F1 counts: the normalised text split at white space."""
    return normalize_answer(text).split()


# -- CMRC 2018 ----------------------------------------------------------------------------------
def _rules(*pairs: tuple[str, str]) -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple((re.compile(pattern), repl) for pattern, repl in pairs)


# The behaviour of NLTK's word tokenizer on one line, as ordered rewrites (our own expression of it).
_OPENING = _rules(
    (r"([«“‘„]|`+)", r" \1 "),  # opening marks stand alone
    (r'^"', " `` "),  # a double quote that opens the text, or follows a space or bracket, opens
    (r'([ (\[{<])"', r"\1 `` "),
    (r"(?i)(?<!\w)'(?!(?:re|ve|ll|m|t|s|d|n)\b)(?=\w)", "' "),  # 'word, but not 're 've ... 'n
)
_MARKS = _rules(
    (r"([^.])(\.)([\]\)}>\"'»”’ ]*)\s*$", r"\1 \2 \3 "),  # the period that ends the text
    (r"([:,])([^\d])", r" \1 \2"),  # a comma or colon, unless a digit follows
    (r"([:,])$", r" \1 "),
    (r"\.{2,}", r" \g<0> "),
    (r"[;@#$%&?!*\u2012-\u2015\]\[(){}<>]", r" \g<0> "),  # always alone (dashes: figure, en, em, bar)
    (r"([^'])' ", r"\1 ' "),
    (r"--", " -- "),
)
_CLOSING = _rules(
    (r"([»”’])", r" \1 "),
    (r"''", " '' "),
    (r'"', " '' "),  # any double quote left closes
    (r"\s+", " "),
    (r"([^' ])('[sS]|'[mM]|'[dD]|') ", r"\1 \2 "),  # possessive 's, I'm, I'd, plural possessive '
    (r"([^' ])('ll|'LL|'re|'RE|'ve|'VE|n't|N'T) ", r"\1 \2 "),
)


def _latin_words(run: str) -> list[str]:
    """Split a run of non-Chinese text into words as NLTK's word tokenizer does (module docstring)."""
    text = run
    for rules in (_OPENING, _MARKS):
        for pattern, repl in rules:
            text = pattern.sub(repl, text)
    text = f" {text} "
    for pattern, repl in _CLOSING:
        text = pattern.sub(repl, text)
    return text.split()


def cmrc_tokens(text: str) -> list[str]:
    """CMRC 2018's mixed segmentation with its punctuation deleted: Chinese characters one by one,
    the text between them as words (:func:`_latin_words`)."""
    tokens: list[str] = []
    run: list[str] = []
    for ch in text.lower().strip():
        if ch in CMRC_PUNCTUATION:
            continue  # deleted: the text on either side joins
        if _CMRC_HAN.match(ch):
            if run:
                tokens.extend(_latin_words("".join(run)))
                run = []
            tokens.append(ch)
        else:
            run.append(ch)
    if run:
        tokens.extend(_latin_words("".join(run)))
    return tokens


def cmrc_exact_text(text: str) -> str:
    """What CMRC 2018's exact match compares: lower case, trimmed, the marks of its list deleted."""
    return "".join(ch for ch in text.lower().strip() if ch not in CMRC_PUNCTUATION)


def _longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest run of tokens found, in order and unbroken, in both ``a`` and ``b``."""
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b):
            if x == y:
                current[j + 1] = previous[j] + 1
                best = max(best, current[j + 1])
        previous = current
    return best


# -- scores -------------------------------------------------------------------------------------
def _language(prediction: str, gold: str, language: Language | None) -> Language:
    return language or answer_language(prediction, [gold])


def exact_match(prediction: str, gold: str, language: Language | None = None) -> float:
    """1.0 when ``prediction`` equals ``gold`` under the rules of ``language``.

    Args:
        language: ``en`` or ``zh``; None picks ``zh`` when either text holds a Chinese character.
    """
    if _language(prediction, gold, language) == "zh":
        return float(cmrc_exact_text(prediction) == cmrc_exact_text(gold))
    return float(normalize_answer(prediction) == normalize_answer(gold))


def f1_score(prediction: str, gold: str, language: Language | None = None) -> float:
    """F1 of ``prediction`` against one accepted answer (0..1) under the rules of ``language``.

    Args:
        language: ``en`` (bag of words) or ``zh`` (longest common run of tokens); None picks
            ``zh`` when either text holds a Chinese character.
    """
    if _language(prediction, gold, language) == "zh":
        pred, ref = cmrc_tokens(prediction), cmrc_tokens(gold)
        common = _longest_common_run(pred, ref)
    else:
        pred, ref = squad_tokens(prediction), squad_tokens(gold)
        common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def best_exact_match(prediction: str, golds: Sequence[str], language: Language | None = None) -> float:
    """Exact match against the closest of several accepted answers (0.0 for none)."""
    return max((exact_match(prediction, g, language) for g in golds), default=0.0)


def best_f1(prediction: str, golds: Sequence[str], language: Language | None = None) -> float:
    """F1 against the closest of several accepted answers (0.0 for none)."""
    return max((f1_score(prediction, g, language) for g in golds), default=0.0)
