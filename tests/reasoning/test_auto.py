"""The auto mode with a scripted model: the model's decision, the fallback rule, the budget's bound."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from reasonloop.agents import Agent
from reasonloop.errors import LLMUnreachable
from reasonloop.events import Answer, Plan, Route, Searched
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.reasoning.base import Budget, Reasoning
from reasonloop.reasoning.steps.router import RouteDecision, bound, route_question
from reasonloop.registry import PluginInfo, Registry
from tests.reasoning.helpers import FakeRetriever, collect_events

COMPARE = "Which is taller, the Eiffel Tower or the tower in Lyon?"


def _route(events: list) -> Route:
    routes = [e for e in events if isinstance(e, Route)]
    assert len(routes) == 1
    return routes[0]


async def test_the_models_json_decision_routes_and_the_trace_says_why(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(
        replies=['{"route": "single", "reason": "one fact about one tower"}', "It is 330 metres tall [1]."]
    )
    events = await collect_events(Agent(mode="auto", llm=llm, kb=retriever), "How tall is the Eiffel Tower?")
    route = _route(events)
    assert (route.route, route.strategy, route.decided_by, route.reason) == (
        "single",
        "qa",
        "model",
        "one fact about one tower",
    )
    kinds = [e.type for e in events]
    assert kinds.index("route") < kinds.index("searched")  # the route comes before the chosen strategy's work
    assert events[0].reasoning == "auto" and isinstance(events[-1], Answer)
    assert events[-1].usage.llm_calls == 2  # the router's call counts in the run


async def test_multi_hop_runs_the_multi_hop_strategy(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(
        replies=[
            '{"route": "multi_hop", "reason": "compares two towers"}',
            "1. How tall is the Eiffel Tower?\n2. How tall is the tower in Lyon?",
            "330 metres [1].",
            "The documents do not say.",
            "The Eiffel Tower [1].",
        ]
    )
    agent = Agent(mode="auto", llm=llm, kb=retriever, settings={"multi_hop": "decompose"})
    events = await collect_events(agent, COMPARE)
    assert (_route(events).route, _route(events).strategy) == ("multi_hop", "decompose")
    assert any(isinstance(e, Plan) for e in events) and isinstance(events[-1], Answer)


@pytest.mark.parametrize(
    "reply",
    [
        '{"route": "multi_hop", "reason": ',  # broken JSON
        "I'm sorry, but I can't decide that for you.",  # a refusal
        '{"route": "somewhere"}',  # an unknown label
    ],
)
async def test_a_reply_without_a_decision_falls_back_to_the_rule(reply: str, retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=[reply, "330 metres [1]."])
    events = await collect_events(
        Agent(mode="auto", llm=llm, kb=retriever), "How tall is the Eiffel Tower, according to the documents?"
    )
    route = _route(events)
    assert (route.route, route.decided_by) == ("single", "rule")
    assert "the model's reply held no route" in route.reason
    assert isinstance(events[-1], Answer) and events[-1].text == "330 metres [1]."


async def test_a_model_that_fails_leaves_the_decision_to_the_rule() -> None:
    class Down(ScriptedProvider):
        async def stream(self, messages, **kwargs) -> AsyncIterator:  # type: ignore[override]
            raise LLMUnreachable("connection refused")
            yield

    decision = await route_question(Down(replies=[]), COMPARE)
    assert (decision.route, decision.decided_by) == ("multi_hop", "rule")
    assert "could not be asked: connection refused" in decision.reason


async def test_route_none_answers_without_searching(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=['{"route": "none", "reason": "a greeting"}', "Hello! Ask me anything."])
    events = await collect_events(Agent(mode="auto", llm=llm, kb=retriever), "Good morning, how are you?")
    assert (_route(events).route, _route(events).strategy) == ("none", "")
    assert retriever.queries == [] and not any(isinstance(e, Searched) for e in events)
    assert events[-1].text == "Hello! Ask me anything."


async def test_the_rule_alone_when_the_model_is_not_asked(retriever: FakeRetriever) -> None:
    llm = ScriptedProvider(replies=["330 metres [1]."])
    agent = Agent(mode="auto", llm=llm, kb=retriever, settings={"ask_model": False})
    events = await collect_events(agent, "How tall is the Eiffel Tower?")
    assert (_route(events).route, _route(events).decided_by) == ("single", "rule")
    assert len(llm.prompts) == 1  # only the answer's call


async def test_a_small_budget_never_routes_to_research() -> None:
    llm = ScriptedProvider(replies=['{"route": "research", "reason": "a broad report"}'])
    decision = await route_question(llm, "Write a report on every supplier.", budget=Budget(max_tokens=2_000))
    assert (decision.route, decision.wanted, decision.decided_by) == ("single", "research", "model")
    assert "the budget (2000 tokens) is too small for research" in decision.reason
    short = bound(RouteDecision("research", "r", "rule"), Budget(timeout_s=30))
    assert (short.route, short.wanted) == ("multi_hop", "research")
    roomy = bound(RouteDecision("research", "r", "rule"), Budget(max_tokens=100_000, timeout_s=600))
    assert (roomy.route, roomy.wanted) == ("research", None)


async def test_a_tiny_budget_does_not_even_ask_the_model() -> None:
    llm = ScriptedProvider(replies=[])
    decision = await route_question(llm, "Write a report on every supplier.", budget=Budget(max_tokens=300))
    assert decision.decided_by == "rule" and decision.route == "single" and decision.wanted == "research"
    assert len(llm.prompts) == 0 and "too small to ask the model" in decision.reason


async def test_research_route_without_the_research_strategy_goes_multi_hop(retriever: FakeRetriever) -> None:
    registry = Registry(use_entry_points=False)  # resolves built-ins by id; has no research strategy
    llm = ScriptedProvider(
        replies=[
            '{"route": "research", "reason": "a report"}',
            "The Eiffel Tower is 330 metres tall. So the answer is: 330 metres.",
        ]
    )
    events = await collect_events(Agent(mode="auto", llm=llm, kb=retriever, registry=registry), COMPARE)
    route = _route(events)
    assert (route.route, route.strategy, route.wanted) == ("multi_hop", "ircot", "research")
    assert "strategy research is not available" in route.reason


async def test_research_route_selects_the_research_strategy_when_installed(retriever: FakeRetriever) -> None:
    ran: list[str] = []

    class Research(Reasoning):  # stands in for the research strategy: only the routing is tested here
        info = PluginInfo(id="research", name="Research", description="test stand-in")

        async def stream(self, question: str):
            ran.append(question)
            yield self.answer("a report")

    registry = Registry(use_entry_points=False)
    registry.register("reasoning", "research", Research)
    llm = ScriptedProvider(replies=['{"route": "research", "reason": "a report over every document"}'])
    events = await collect_events(Agent(mode="auto", llm=llm, kb=retriever, registry=registry), "Survey it all.")
    assert (_route(events).route, _route(events).strategy) == ("research", "research")
    assert ran == ["Survey it all."] and events[-1].text == "a report"


async def test_a_base_model_is_not_asked_for_a_decision() -> None:
    from reasonloop.llm.base import Capabilities

    class Base(ScriptedProvider):
        capabilities = Capabilities(base_model=True)

    llm = Base(replies=[])
    decision = await route_question(llm, COMPARE)
    assert (decision.route, decision.decided_by) == ("multi_hop", "rule")
    assert "a base model is not asked" in decision.reason and len(llm.prompts) == 0
