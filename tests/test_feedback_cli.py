"""Feedback outside a run (``reasonloop feedback``) and its guidance in later runs' system prompts."""

from __future__ import annotations

import asyncio
import json
import os

import pytest

from reasonloop.agents import Agent, AgentResources
from reasonloop.config import load_settings
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry
from reasonloop.tools.feedback import FeedbackStore, FeedbackTool
from tests.cli_run import run_cli as cli
from tests.environment import is_outside_setting


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "reasonloop.toml").write_text(
        '[tools.feedback]\npath = "fb/feedback.sqlite"\n[agents.helper]\nreasoning = "toolcall"\n',
        encoding="utf-8",
    )
    saved = Registry._default
    yield
    Registry.set_default(saved)


def stored(tmp_path, user: str, conversation: str) -> list:
    store = FeedbackStore(tmp_path / "fb" / "feedback.sqlite")
    try:
        return asyncio.run(store.recent(user, conversation))
    finally:
        store.close()


def test_cli_feedback_lands_in_the_configured_store(capsys, tmp_path) -> None:
    code, out, _ = cli(capsys, "feedback", "bad", "--reason", "imprecise", "--user", "ann", "--conversation", "c1")
    assert code == 0 and "recorded: bad (imprecise)" in out and "guidance for the next answers" in out
    [item] = stored(tmp_path, "ann", "c1")
    assert (item.rating, item.reason, item.user, item.conversation) == ("bad", "imprecise", "ann", "c1")

    code, out, _ = cli(capsys, "feedback", "good", "--user", "ann", "--conversation", "c1", "--run", "r7", "--json")
    data = json.loads(out)
    assert code == 0 and data["feedback"]["rating"] == "good" and data["feedback"]["run_id"] == "r7"
    assert "1 of the last 2 answers were judged bad" in data["guidance"]


def test_cli_feedback_refuses_other_ratings(capsys) -> None:
    code, _, err = cli(capsys, "feedback", "meh")
    assert code == 2 and "meh" in err


def test_guidance_appears_in_a_later_runs_system_prompt(capsys, tmp_path) -> None:
    code, _, _ = cli(
        capsys, "feedback", "bad", "--reason", "imprecise: quote sources", "--user", "ann", "--conversation", "c1"
    )
    assert code == 0
    settings = load_settings()
    llm = ScriptedProvider(replies=["answer 1", "answer 2"])
    agent = Agent.from_config("helper", settings, llm=llm)
    asyncio.run(agent.run("q", user_id="ann", conversation_id="c1"))
    system = llm.prompts[0][0].content
    assert "Feedback from this user: 1 of the last 1 answers were judged bad." in system
    assert "'imprecise: quote sources'" in system
    asyncio.run(agent.run("q", user_id="bob", conversation_id="c1"))
    assert "Feedback from this user" not in llm.prompts[1][0].content
    assert agent.instructions == []  # guidance is per run, never kept on the agent


async def test_feedback_given_in_a_run_guides_the_next_one(tmp_path) -> None:
    store = FeedbackStore(tmp_path / "f.sqlite")
    rate = {"tool_calls": [{"id": "f1", "name": "feedback", "arguments": {"rating": "bad", "reason": "too vague"}}]}
    llm = ScriptedProvider(replies=[rate, "Noted.", "A precise answer."])
    agent = Agent("toolcall", llm=llm, tools=[FeedbackTool()], feedback=store)
    first = await agent.run("that was too vague", user_id="ann", conversation_id="c2")
    assert first.steps[0].error is None and "Recorded" in first.steps[0].observation
    await agent.run("try again", user_id="ann", conversation_id="c2")
    assert "'too vague'" in llm.prompts[2][0].content
    [item] = await store.recent("ann", "c2")
    assert item.run_id == first.meta.run_id
    store.close()


async def test_a_broken_store_does_not_break_the_run(tmp_path) -> None:
    store = FeedbackStore(tmp_path / "f.sqlite")
    store.close()  # every query now fails
    result = await Agent("toolcall", llm=ScriptedProvider(replies=["fine"]), feedback=store).run("q", user_id="ann")
    assert result.content == "fine" and result.error is None


async def test_one_store_per_file_per_owner(tmp_path) -> None:
    settings = load_settings()
    resources = AgentResources()
    assert resources.feedback_store(settings) is resources.feedback_store(load_settings())
    assert resources.feedback_store(settings).path.endswith(os.path.join("fb", "feedback.sqlite"))
    await resources.aclose()
