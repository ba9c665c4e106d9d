"""A run's own max_tokens / temperature over a shared model's settings."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from reasonloop.agents import Agent
from reasonloop.config import LLMSettings
from reasonloop.llm.base import Message
from reasonloop.llm.sampling import SampledLLM, Sampling, with_sampling
from reasonloop.llm.scripted import ScriptedProvider

USER = [Message.user("question?")]


def test_nothing_to_set_leaves_the_model_as_it_is():
    llm = ScriptedProvider(replies=["a"])
    assert with_sampling(llm, None) is llm
    assert with_sampling(llm, Sampling()) is llm


async def test_the_runs_sampling_reaches_each_call_unless_the_call_sets_its_own():
    llm = ScriptedProvider(
        LLMSettings(provider="scripted", max_tokens=500, temperature=0.9, max_retries=0),
        replies=["one", "two", "three"],
    )
    run = with_sampling(llm, Sampling(max_tokens=12, temperature=0.1))
    assert [c async for c in run.stream(USER)]
    assert [c async for c in run.stream(USER, max_tokens=3)]
    assert [c async for c in llm.stream(USER)]  # the shared model itself is unchanged
    assert list(llm.sampling_seen) == [(12, 0.1), (3, 0.1), (500, 0.9)]
    # One model under both: replies, usage records and identity are the wrapped model's.
    assert llm.requests == 3 and len(llm.calls) == 3 and run.calls is llm.calls
    assert run.name == llm.name and run.capabilities == llm.capabilities


async def test_only_what_the_run_sets_replaces_the_configuration():
    llm = ScriptedProvider(LLMSettings(provider="scripted", temperature=0.7, max_retries=0), replies=["a"])
    assert [c async for c in with_sampling(llm, Sampling(max_tokens=5)).stream(USER)]
    assert list(llm.sampling_seen) == [(5, 0.7)]


def test_wrapping_twice_merges_into_one_wrapper():
    llm = ScriptedProvider(replies=["a"])
    once = with_sampling(llm, Sampling(max_tokens=5, temperature=0.2))
    twice = with_sampling(once, Sampling(temperature=1.0))
    assert isinstance(twice, SampledLLM) and twice.inner is llm
    assert twice.sampling == Sampling(max_tokens=5, temperature=1.0)


async def test_closing_a_runs_wrapper_leaves_the_shared_model_open():
    closed = []

    class Owned(ScriptedProvider):
        async def aclose(self) -> None:
            closed.append(self)

    llm = Owned(replies=["a"])
    await with_sampling(llm, Sampling(max_tokens=5)).aclose()
    assert closed == []


@pytest.mark.parametrize(
    ("values", "field"),
    [({"max_tokens": 0}, "max_tokens"), ({"temperature": 2.5}, "temperature"), ({"top_k": 3}, "top_k")],
)
def test_out_of_range_or_unknown_values_are_refused(values, field):
    with pytest.raises(ValidationError) as info:
        Sampling.model_validate(values)
    assert info.value.errors()[0]["loc"] == (field,)


async def test_an_agents_strategy_calls_its_models_with_the_runs_sampling():
    planner = ScriptedProvider(replies=["#E1 = lookup[q]"], repeat_last=True)
    solver = ScriptedProvider(replies=["planned answer"], repeat_last=True)
    llm = ScriptedProvider(replies=["plain answer"], repeat_last=True)
    agent = Agent(reasoning="rewoo", llm=llm, planner_llm=planner, solver_llm=solver, tools=[])
    result = await agent.run("q?", sampling=Sampling(max_tokens=12, temperature=0.0))
    assert result.content
    seen = [*planner.sampling_seen, *solver.sampling_seen, *llm.sampling_seen]
    assert seen and all(s == (12, 0.0) for s in seen)
    await agent.run("q?")  # the next run without sampling: the models' own settings again
    assert planner.sampling_seen[-1] == (None, None)


async def test_the_scripted_model_stops_at_max_tokens_as_a_server_would():
    llm = ScriptedProvider(replies=["one two three four five six seven eight"], repeat_last=True)
    cut = [c async for c in llm.stream(USER, max_tokens=3)]
    assert "".join(c.text for c in cut if hasattr(c, "text")).split() == ["one", "two", "three"]
    assert cut[-1].finish_reason == "length"
    whole = [c async for c in llm.stream(USER, max_tokens=50)]
    assert whole[-1].finish_reason == "stop"


@pytest.mark.parametrize("reasoning", ["toolcall", "react"])
async def test_an_answer_cut_at_the_runs_max_tokens_says_so(reasoning):
    reply = "Final Answer: " + " ".join(["word"] * 40) if reasoning == "react" else " ".join(["word"] * 40)
    agent = Agent(reasoning=reasoning, llm=ScriptedProvider(replies=[reply], repeat_last=True), tools=[])
    cut = await agent.run("q?", sampling=Sampling(max_tokens=12))
    assert cut.stop_reason == "length" and 0 < len(cut.content.split()) <= 12
    whole = await agent.run("q?")
    assert whole.stop_reason == "final" and len(whole.content.split()) == 40


async def test_a_sampled_model_scores_as_its_inner_model() -> None:
    from reasonloop.llm.scripted import ScriptedProvider

    inner = ScriptedProvider(replies=[], scores=[{" Yes": -0.5, " No": -2.0}])
    sampled = with_sampling(inner, Sampling(max_tokens=8, temperature=0))
    assert sampled.capabilities.scores_continuations
    assert await sampled.score("Q: ok?\nA:", [" Yes", " No"]) == [-0.5, -2.0]
