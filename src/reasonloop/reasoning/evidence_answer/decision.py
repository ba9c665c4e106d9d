"""Yes/no and either/or decided by the model's likelihoods, calibrated, or not decided at all.

A base model asked to *write* "yes" or "no" says "yes" to almost anything. Asked instead how
likely each candidate continuation is after the evidence (:meth:`~reasonloop.llm.base.LLM.score`),
and compared with how likely it is after the same prompt without the evidence (the passage
replaced by "N/A": the content-free prompt of contextual calibration), the candidate the
evidence itself makes likelier shows. A decision is made only when that shift favours one
candidate by at least ``margin`` (natural log, so 1.0 is an odds ratio of e).

Guards that only ever turn a decision into "not decided":

- "yes" needs the supporting sentence to contain every name and number of the question (a name
  only inside a longer one, "Aria 2" in "Aria 2 Pro", is another thing), at least half of its
  content words, and to agree with it in polarity (a "not", "cannot", 不 … on
  one side only is never a "yes");
- "no" over sentences that do not negate the question needs twice the margin;
- an option must be named in the evidence to be picked, and the pick must not change when the
  question names the options in the other order.

A model that cannot score continuations decides nothing: the answer quotes the evidence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from reasonloop.errors import LLMError
from reasonloop.events import Usage
from reasonloop.llm.base import LLM
from reasonloop.reasoning.steps.terms import QuestionTerms, negates
from reasonloop.tokens import count_tokens, trim_to_tokens

__all__ = ["Decision", "decide_choice", "decide_yes_no", "names_option"]

QUESTION_TOKENS = 200
"""Longest question written into a scoring prompt (a longer one is trimmed)."""
COVERED = 0.5
"""Share of the question's content words a sentence must hold to support a "yes"."""
_NA = "N/A"

_YES_NO_PROMPT = {
    "en": (
        "Passage: The reading room is open on weekdays. It does not open on public holidays.\n"
        "Question: Does the reading room open on public holidays?\nAnswer: No\n\n"
        "Passage: Members may borrow up to ten books at a time.\n"
        "Question: Can members borrow more than one book?\nAnswer: Yes\n\n"
        "Passage: {passage}\nQuestion: {question}\nAnswer:"
    ),
    "zh": (
        "文段：阅览室工作日开放，法定节假日不开放。\n问题：阅览室法定节假日开放吗？\n答案：否\n\n"
        "文段：会员每次最多可以借十本书。\n问题：会员可以一次借两本书吗？\n答案：是\n\n"
        "文段：{passage}\n问题：{question}\n答案："
    ),
}
_YES_NO_WORDS = {"en": (" Yes", " No"), "zh": ("是", "否")}
_CHOICE_PROMPT = {
    "en": "Passage: {passage}\nQuestion: {question}\nAnswer:",
    "zh": "文段：{passage}\n问题：{question}\n答案：",
}


@dataclass
class Decision:
    """What the scores decided: ``choice`` (``None`` when nothing was decided) and why."""

    choice: str | None
    why: str
    shifts: dict[str, float]


async def _shifts(
    llm: LLM, usage: Usage, template: str, passage: str, question: str, candidates: Sequence[str]
) -> dict[str, float] | None:
    """How much the evidence raises each candidate's log-probability over the content-free prompt
    (``None`` when the model cannot score). Each scoring call counts in the run's ``usage``."""
    question = trim_to_tokens(question, QUESTION_TOKENS)
    prompts = [template.format(passage=passage, question=question), template.format(passage=_NA, question=question)]
    try:
        real, blank = [await llm.score(prompt, candidates) for prompt in prompts]
    except LLMError:
        return None
    finally:
        usage.llm_calls += len(prompts)
    usage.prompt_tokens += sum(count_tokens(p) for p in prompts)
    return {c: r - b for c, r, b in zip(candidates, real, blank, strict=True)}


def _ranked(shifts: dict[str, float]) -> tuple[str, float]:
    ordered = sorted(shifts, key=lambda c: -shifts[c])
    return ordered[0], shifts[ordered[0]] - shifts[ordered[1]]


async def decide_yes_no(
    llm: LLM, usage: Usage, language: str, terms: QuestionTerms, passage: str, *, margin: float
) -> Decision:
    """``"yes"``, ``"no"`` or undecided, for a yes/no question over the supporting ``passage``."""
    lang = "zh" if language == "zh" else "en"
    yes, no = _YES_NO_WORDS[lang]
    if not llm.capabilities.scores_continuations:
        return Decision(None, f"{llm.name} cannot score continuations", {})
    shifts = await _shifts(llm, usage, _YES_NO_PROMPT[lang], passage, terms.question, (yes, no))
    if shifts is None:
        return Decision(None, f"{llm.name} could not score the answers", {})
    best, lead = _ranked(shifts)
    read = f"evidence shift yes {shifts[yes]:+.2f}, no {shifts[no]:+.2f}"
    opposed = negates(passage) != terms.negated  # one side negates what the other asserts
    if best == yes:
        if opposed:
            return Decision(None, f"{read}; the evidence negates what the question asserts", shifts)
        if missing := terms.missing_names(passage) + _missing_numbers(terms.question, passage):
            return Decision(None, f"{read}; the evidence does not name {', '.join(missing)}", shifts)
        if elsewhere := terms.names_elsewhere(passage):
            return Decision(
                None, f"{read}; the evidence names {', '.join(elsewhere)} only as part of another name", shifts
            )
        if terms.coverage(passage) < COVERED:
            return Decision(None, f"{read}; the evidence states too little of what the question asks", shifts)
        if lead < margin:
            return Decision(None, f"{read}; below the margin {margin:g}", shifts)
        return Decision("yes", read, shifts)
    needed = margin if opposed else 2 * margin
    if lead < needed:
        return Decision(None, f"{read}; below the margin {needed:g}", shifts)
    return Decision("no", read, shifts)


async def decide_choice(
    llm: LLM, usage: Usage, language: str, terms: QuestionTerms, passage: str, options: Sequence[str], *, margin: float
) -> Decision:
    """One of ``options``, or undecided, for an either/or question over the supporting ``passage``.

    The options are scored in the question's order and again with the two swapped in it: a pick
    that follows their order rather than the evidence is not a decision."""
    lang = "zh" if language == "zh" else "en"
    if not llm.capabilities.scores_continuations:
        return Decision(None, f"{llm.name} cannot score continuations", {})
    named = [o for o in options if names_option(passage, o)]
    if not named:
        return Decision(None, "the evidence names none of the options", {})
    space = "" if lang == "zh" else " "
    candidates = [f"{space}{o}" for o in options]
    questions = [terms.question]
    swapped = _swap(terms.question, options)
    if swapped is not None:
        questions.append(swapped)
    leads: list[tuple[str, float]] = []
    by_option: dict[str, float] = {}
    for question in questions:
        shifts = await _shifts(llm, usage, _CHOICE_PROMPT[lang], passage, question, candidates)
        if shifts is None:
            return Decision(None, f"{llm.name} could not score the options", {})
        by_option = {o: shifts[c] for o, c in zip(options, candidates, strict=True)}
        leads.append(_ranked(by_option))
    read = "evidence shift " + ", ".join(f"{o} {v:+.2f}" for o, v in by_option.items())
    picks = {pick for pick, _ in leads}
    if len(picks) > 1:
        return Decision(None, f"{read}; the pick follows the order of the options", by_option)
    best, lead = leads[0][0], min(lead for _, lead in leads)
    if best not in named:
        return Decision(None, f"{read}; the evidence does not name {best}", by_option)
    if lead < margin:
        return Decision(None, f"{read}; below the margin {margin:g}", by_option)
    return Decision(best, read, by_option)


def _swap(question: str, options: Sequence[str]) -> str | None:
    """``question`` with its two options in the other order (``None`` when they are not both written in it)."""
    a, b = options[0], options[1]
    i, j = question.find(a), question.rfind(b)
    if i < 0 or j < 0 or i + len(a) > j:
        return None
    return question[:i] + b + question[i + len(a) : j] + a + question[j + len(b) :]


_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def _missing_numbers(question: str, passage: str) -> list[str]:
    """The numbers of ``question`` that ``passage`` does not hold (a "yes" must not assert one)."""
    held = set(_NUMBER.findall(passage))
    return [n for n in _NUMBER.findall(question) if n not in held]


def names_option(passage: str, option: str) -> bool:
    """Whether ``passage`` names ``option`` (one of its words, or the whole of a one-word or Chinese one)."""
    low = passage.lower()
    words = [w for w in option.lower().split() if len(w) > 1] or [option.lower()]
    return any(w in low for w in words)
