"""The router of the ``auto`` mode: which route a question takes, decided by the model, bounded by the budget.

:func:`route_question` asks the model for a JSON decision (:mod:`reasonloop.reasoning.formats.route_reply`)
and, when the reply holds none (prose, a refusal, broken JSON) or the model cannot be asked (it fails,
it is a base model, which continues text instead of following a format, or the budget is too small for
the call), takes the fallback rule's
(:func:`~reasonloop.reasoning.steps.route_rule.rule_route`). The budget then bounds the choice: a
route is taken only when the run's token and time limits leave it room (:data:`ROUTE_FLOOR`);
otherwise the next cheaper one is, and the decision keeps the route it wanted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from reasonloop.errors import LLMError
from reasonloop.events import RouteName, Usage
from reasonloop.llm.base import LLM, Message
from reasonloop.llm.sampling import Sampling, with_sampling
from reasonloop.reasoning.base import Budget
from reasonloop.reasoning.formats.prompts import render
from reasonloop.reasoning.formats.route_reply import ROUTES, parse_route_reply
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.route_rule import rule_route

__all__ = ["ASK_FLOOR_TOKENS", "ROUTE_FLOOR", "RouteDecision", "affordable", "bound", "route_question"]

ROUTE_FLOOR: dict[RouteName, tuple[int, float]] = {
    "none": (0, 0.0),
    "single": (0, 0.0),
    "multi_hop": (4_000, 20.0),
    "research": (30_000, 120.0),
}
"""(tokens, seconds) a route needs at least. A multi-hop strategy used about 1,000-2,900 tokens on
HotpotQA and MuSiQue with ideal replies (docs/reasoning.md), so 4,000 leaves it room; a research run
makes several rounds of sub-agents, each at least a multi-hop run's cost. 20 s and 120 s are the
same margins at the speed of a small local model."""

ASK_FLOOR_TOKENS = 600
"""The router's own call reads about 300 prompt tokens: below this budget the rule decides alone."""

_REPLY_TOKENS = 96
"""Room for the JSON decision and a short reason; a longer reply is cut, not waited for."""


@dataclass(frozen=True, slots=True)
class RouteDecision:
    route: RouteName
    reason: str
    decided_by: Literal["model", "rule"]
    wanted: RouteName | None = None
    """The route decided before :func:`bound` ruled it out."""


def affordable(route: RouteName, budget: Budget | None, spent: int = 0) -> bool:
    """Whether ``budget`` (with ``spent`` tokens already used) leaves ``route`` its floor."""
    if budget is None:
        return True
    tokens, seconds = ROUTE_FLOOR[route]
    if budget.max_tokens is not None and budget.max_tokens - spent < tokens:
        return False
    return not (budget.timeout_s is not None and budget.timeout_s < seconds)


def bound(decision: RouteDecision, budget: Budget | None, spent: int = 0) -> RouteDecision:
    """``decision`` stepped down to the most searching route the budget affords."""
    route = decision.route
    while route not in ("none", "single") and not affordable(route, budget, spent):
        route = ROUTES[ROUTES.index(route) - 1]
    if route == decision.route:
        return decision
    limit = _limits(budget)
    reason = f"{decision.reason}; the budget ({limit}) is too small for {decision.route}"
    return RouteDecision(route, reason, decision.decided_by, wanted=decision.route)


def _limits(budget: Budget | None) -> str:
    if budget is None:
        return "none"
    parts = []
    if budget.max_tokens is not None:
        parts.append(f"{budget.max_tokens} tokens")
    if budget.timeout_s is not None:
        parts.append(f"{budget.timeout_s:g} s")
    return ", ".join(parts) or "none"


async def route_question(
    llm: LLM | None,
    question: str,
    *,
    language: str = "en",
    usage: Usage | None = None,
    budget: Budget | None = None,
) -> RouteDecision:
    """The route ``question`` takes: the model's decision (``llm``; ``None`` asks none), else the
    rule's, bounded by ``budget``. The call counts in ``usage``.

    A model that fails (:class:`~reasonloop.errors.LLMError`) or replies with no readable decision
    leaves the decision to the rule, and the reason says so.
    """
    usage = usage if usage is not None else Usage()
    rule, why = rule_route(question)
    decision = RouteDecision(rule, why, "rule")
    if llm is None:
        decision = RouteDecision(rule, f"{why} (the rule decided: no model asked)", "rule")
    elif llm.capabilities.base_model:  # it continues text, it does not follow the JSON format
        decision = RouteDecision(rule, f"{why} (the rule decided: a base model is not asked for a decision)", "rule")
    elif budget is not None and budget.max_tokens is not None and budget.max_tokens < ASK_FLOOR_TOKENS:
        decision = RouteDecision(
            rule, f"{why} (the rule decided: the token budget is too small to ask the model)", "rule"
        )
    else:
        turn = Turn()
        tracker = BudgetTracker(budget or Budget(), usage)
        model = with_sampling(llm, Sampling(max_tokens=_REPLY_TOKENS))
        prompt = [Message.user(render("route", language, question=question))]
        try:
            async for _ in llm_turn(model, prompt, turn, tracker):
                pass
        except LLMError as exc:
            decision = RouteDecision(
                rule, f"{why} (the rule decided: the model could not be asked: {exc.message})", "rule"
            )
        else:
            reply = parse_route_reply(turn.text)
            if reply is not None:
                decision = RouteDecision(reply.route, reply.reason or "the model's decision", "model")
            else:
                decision = RouteDecision(rule, f"{why} (the rule decided: the model's reply held no route)", "rule")
    return bound(decision, budget, usage.prompt_tokens + usage.completion_tokens)
