"""Thinking modes: what each runs, and the errors in our words."""

from __future__ import annotations

import pytest

from reasonloop.agents import Agent
from reasonloop.errors import ModeInvalid
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.plugin_table import LANGUAGES, MODES
from reasonloop.reasoning.base import Reasoning
from reasonloop.reasoning.modes import MODE_IDS, resolve_mode
from reasonloop.registry import PluginInfo, Registry


def test_the_modes_and_what_they_run() -> None:
    assert MODE_IDS == ("fast", "balanced", "deep", "research", "auto")
    assert {row.id: row.strategy for row in MODES} == {
        "fast": "qa",
        "balanced": "ircot",
        "deep": "react",
        "research": "research",
        "auto": "auto",
    }
    for row in MODES:
        for language in LANGUAGES:
            name, description = row.text(language)
            assert name and description


@pytest.mark.parametrize(
    ("mode", "strategy"), [("fast", "qa"), ("balanced", "ircot"), ("deep", "react"), ("auto", "auto")]
)
def test_an_agent_given_a_mode_runs_its_strategy(mode: str, strategy: str) -> None:
    agent = Agent(mode=mode, llm=ScriptedProvider(replies=[]))
    assert agent.reasoning_id == strategy and agent.mode == mode


def test_the_callers_settings_go_over_the_modes() -> None:
    agent = Agent(mode="deep", llm=ScriptedProvider(replies=[]), settings={"max_rounds": 3})
    assert (agent.settings.max_rounds, agent.settings.max_tool_calls) == (3, 16)


def test_bad_modes_are_refused_in_our_words() -> None:
    with pytest.raises(ModeInvalid, match=r"unknown mode 'quick': the modes are fast, balanced, deep, research, auto"):
        Agent(mode="quick")
    with pytest.raises(ModeInvalid, match=r"give a strategy or a mode, not both \(strategy 'qa', mode 'fast'\)"):
        Agent(reasoning="qa", mode="fast")


def test_research_mode_without_the_research_strategy_is_a_clear_error() -> None:
    registry = Registry(use_entry_points=False)
    with pytest.raises(ModeInvalid, match="strategy research is not available") as info:
        Agent(mode="research", registry=registry)
    assert info.value.code == "mode.invalid"


def test_research_mode_selects_the_strategy_with_id_research() -> None:
    class Research(Reasoning):
        info = PluginInfo(id="research", name="Research", description="test stand-in")

        async def stream(self, question: str):
            yield self.answer("")

    registry = Registry(use_entry_points=False)
    registry.register("reasoning", "research", Research)
    assert resolve_mode("research", registry) == (Research, {})
    assert Agent(mode="research", registry=registry).strategy is Research
