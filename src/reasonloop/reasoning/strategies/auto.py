"""The ``auto`` mode: route each question to the cheapest way that answers it, then answer that way.

The router (:func:`~reasonloop.reasoning.steps.router.route_question`) decides one of four routes:

- ``none``: one answer without searching (small talk, translation, writing, arithmetic);
- ``single``: one search, one answer (strategy ``qa``);
- ``multi_hop``: the strategy of :attr:`AutoSettings.multi_hop` (``ircot`` by default: it reached
  decompose's exact match on HotpotQA and MuSiQue with ideal replies at about half the calls and
  tokens; docs/reasoning.md);
- ``research``: strategy ``research``, when it is installed; otherwise the multi-hop route, and the
  trace says why.

The model's JSON decision comes first; the fallback rule decides when the model gives none; the
run's budget bounds the choice (a budget too small for research never routes there). A
:class:`~reasonloop.events.Route` event names the route, the strategy and why, before the chosen
strategy's own events, in the same run and with the same budget (the router's call counts in it).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import ClassVar, Literal

from pydantic import Field

from reasonloop.errors import PluginNotFound
from reasonloop.events import Event, Route
from reasonloop.plugin_table import field_text
from reasonloop.reasoning.base import Budget, Reasoning, ReasoningSettings
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.prompts import system_prompt
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.finish import close
from reasonloop.reasoning.steps.llmcall import Turn
from reasonloop.reasoning.steps.retrieval import direct_answer
from reasonloop.reasoning.steps.router import RouteDecision, route_question
from reasonloop.registry import PluginInfo, resolve

__all__ = ["AutoReasoning", "AutoSettings"]

_ROUTE_STRATEGY = {"single": "qa", "research": "research"}


class AutoSettings(ReasoningSettings):
    ask_model: bool = Field(
        default=True,
        **field_text(
            en=("Ask the model", "Let the model decide the route (a JSON reply); off: the rule decides alone."),
            zh=("询问模型", "由模型决定路线（JSON 回复）；关闭时只由规则决定。"),
        ),
    )
    multi_hop: Literal["ircot", "decompose", "rewoo", "react"] = Field(
        default="ircot",
        **field_text(
            en=("Multi-hop strategy", "The strategy that answers questions routed as multi-hop."),
            zh=("多跳策略", "回答被判为多跳的问题所用的策略。"),
        ),
    )


class AutoReasoning(Reasoning):
    """Route the question (none, single, multi-hop, research), then run the chosen strategy."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("reasoning", "auto")
    Settings = AutoSettings
    uses_tools: ClassVar[bool] = True  # a multi-hop strategy may search through docsearch

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        started = time.monotonic()
        language = ctx.language or detect_language(question)
        decision = await route_question(
            ctx.llm if settings.ask_model else None, question, language=language, usage=ctx.usage, budget=ctx.budget
        )
        strategy_id = ""
        if decision.route != "none":
            strategy_id, decision = self._strategy_id(decision)
        yield Route(
            route=decision.route,
            strategy=strategy_id,
            reason=decision.reason,
            decided_by=decision.decided_by,
            wanted=decision.wanted,
        )
        if not strategy_id:
            tracker = BudgetTracker(ctx.budget or Budget(), ctx.usage, ctx.scope.pauses)
            answer = Turn()
            system = system_prompt("chat", language, ctx.instructions)
            async for event in direct_answer(ctx, tracker, ctx.llm, system, ctx.history, question, answer):
                yield event
            yield close(ctx, settings, tracker, answer.text, language)
            return
        if ctx.budget is not None and ctx.budget.timeout_s is not None:  # the router's time counts too
            left = max(ctx.budget.timeout_s - (time.monotonic() - started), 0.001)
            ctx.budget = ctx.budget.model_copy(update={"timeout_s": left})
        chosen = resolve("reasoning", strategy_id, ctx.registry)
        async for event in chosen(None, ctx).stream(question):
            yield event

    def _strategy_id(self, decision: RouteDecision) -> tuple[str, RouteDecision]:
        """The strategy of the route; research falls back to the multi-hop route where it is not installed."""
        multi_hop = self.settings.multi_hop
        if decision.route == "multi_hop":
            return multi_hop, decision
        if decision.route == "research":
            try:
                resolve("reasoning", "research", self.ctx.registry)
            except PluginNotFound:
                reason = f"{decision.reason}; strategy research is not available, so multi-hop ({multi_hop})"
                return multi_hop, RouteDecision("multi_hop", reason, decision.decided_by, wanted="research")
            return "research", decision
        return _ROUTE_STRATEGY[decision.route], decision
