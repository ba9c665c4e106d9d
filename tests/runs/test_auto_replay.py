"""An auto-mode run resumed from its step journal: the router's decision is replayed, not asked again."""

from __future__ import annotations

import asyncio
import contextlib
import json

from reasonloop.agents import Agent
from reasonloop.events import Route
from reasonloop.llm.scripted import ScriptedProvider
from tests.reasoning.helpers import FakeRetriever
from tests.runs.test_replay import run, same

ROUTE = json.dumps({"route": "multi_hop", "reason": "a tower, then its height"})


def reply(messages, tools):
    if '"route":' in messages[-1].content:
        return ROUTE
    return "So the answer is: 330 metres [1]."


async def test_a_finished_auto_run_replays_its_route_and_its_strategy(store):
    first_llm, retriever = ScriptedProvider(replies=reply), FakeRetriever()
    first, _ = await run(
        Agent(mode="auto", llm=first_llm, kb=retriever), store, "run_auto", "How tall is the Eiffel Tower?"
    )
    assert first_llm.requests == 2 and [e.route for e in first if isinstance(e, Route)] == ["multi_hop"]
    again_llm = ScriptedProvider(replies=[])
    again, journal = await run(
        Agent(mode="auto", llm=again_llm, kb=retriever), store, "run_auto", "How tall is the Eiffel Tower?"
    )
    assert again_llm.requests == 0 and journal.replayed >= 2  # neither the router nor the answer asked again
    assert same(again) == same(first)


async def test_an_auto_run_cut_after_its_route_does_not_route_again(store):
    gate, waiting = asyncio.Event(), asyncio.Event()

    class Slow(ScriptedProvider):
        async def _stream(self, request):
            if '"route":' not in request.messages[-1].content:
                waiting.set()
                await gate.wait()  # the process "dies" while the chosen strategy waits on its model
            async for chunk in super()._stream(request):
                yield chunk

    first_llm = Slow(replies=reply)
    life = asyncio.create_task(
        run(Agent(mode="auto", llm=first_llm, kb=FakeRetriever()), store, "run_cut", "How tall is the Eiffel Tower?")
    )
    await asyncio.wait_for(waiting.wait(), 10)
    assert first_llm.requests == 1  # the route was decided; the strategy's call never ends
    life.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await life
    again_llm = ScriptedProvider(replies=reply)
    events, _ = await run(
        Agent(mode="auto", llm=again_llm, kb=FakeRetriever()), store, "run_cut", "How tall is the Eiffel Tower?"
    )
    assert again_llm.requests == 1  # only the strategy's call: the route came from the journal
    route = next(e for e in events if isinstance(e, Route))
    assert (route.route, route.strategy, route.decided_by) == ("multi_hop", "ircot", "model")
    assert events[-1].text.startswith("330 metres")
