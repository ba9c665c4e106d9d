"""Declared agents: [agents.NAME] tables, load-time errors naming the agent, Agent.from_config, ask --agent, MCP."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from reasonloop.agents import Agent, AgentResources, check_agents, declared_agents
from reasonloop.config import Settings, load_settings
from reasonloop.errors import AgentConfigError, ConfigError
from reasonloop.events import Progress, RunStarted, ToolCall, ToolResult
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.registry import Registry
from reasonloop.tools.base import tool
from tests.cli_run import run_cli as cli
from tests.environment import is_outside_setting

MCP_SERVER = Path(__file__).parent.parent / "tools" / "mcp_servers" / "catalog_server.py"


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    for name in list(os.environ):
        if is_outside_setting(name):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    saved = Registry._default
    yield
    Registry.set_default(saved)


@pytest.fixture
def registry() -> Registry:
    reg = Registry()
    reg.register("tool", "lookup", lookup)
    return reg


def call(name: str, call_id: str = "c1", **arguments: object) -> dict:
    return {"tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}


def script(tmp_path: Path, name: str, replies: list) -> str:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(replies), encoding="utf-8")
    return f"scripted:{path}"


def settings_with(tmp_path: Path, agents: dict, **extra: object) -> Settings:
    return Settings(agents=agents, kb={"path": str(tmp_path / "kb")}, **extra)


async def test_from_config_runs_a_declared_agent_with_an_agent_tool(tmp_path, registry) -> None:
    researcher_llm = script(tmp_path, "researcher", [call("lookup", "s1", key="sky"), "The sky is blue."])
    settings = settings_with(
        tmp_path,
        {
            "writer": {
                "reasoning": "toolcall",
                "tools": ["agent:researcher"],
                "instructions": "Be brief.",
                "settings": {"require_tool_call": True, "max_rounds": 3},
            },
            "researcher": {
                "reasoning": "toolcall",
                "llm": researcher_llm,
                "tools": ["lookup"],
                "description": "Finds facts by looking keys up.",
            },
        },
    )
    writer_llm = ScriptedProvider(replies=[call("run_agent", "p1", query="sky colour"), "Blue."])
    agent = Agent.from_config("writer", settings, llm=writer_llm, registry=registry)
    assert (agent.name, agent.reasoning_id, list(agent.tools)) == ("writer", "toolcall", ["run_agent"])

    events = [e async for e in agent.stream("What colour is the sky?")]
    assert events[-1].text == "Blue." and events[-1].stop_reason == "final"  # the guard counted the sub's lookup
    assert any(isinstance(e, ToolCall) and e.tool == "lookup" and e.depth == 1 for e in events)
    assert "Be brief." in writer_llm.prompts[0][0].content
    [spec] = writer_llm.tools_seen[0]
    assert spec.description == "Finds facts by looking keys up."
    sub = agent.tools["run_agent"].agent
    assert sub.name == "researcher" and sub.llm is not writer_llm
    assert sub.llm.prompts[0][-1].content == "sky colour"
    await agent.aclose()


async def test_agents_without_a_model_share_the_given_one_and_a_diamond_builds_once(tmp_path, registry) -> None:
    settings = settings_with(
        tmp_path,
        {
            "top": {"tools": ["agent:left", "agent:right"]},
            "left": {"tools": ["agent:leaf"]},
            "right": {"tools": ["agent:leaf"]},
            "leaf": {"reasoning": "qa"},
        },
    )
    llm = ScriptedProvider(replies=[])
    top = Agent.from_config("top", settings, llm=llm, registry=registry)
    assert sorted(top.tools) == ["agent_left", "agent_right"]
    left, right = top.tools["agent_left"].agent, top.tools["agent_right"].agent
    assert left.tools["run_agent"].agent is right.tools["run_agent"].agent
    assert top.llm is llm and left.llm is llm


@pytest.mark.parametrize(
    ("agents", "requested", "blamed", "fragment"),
    [
        ({"a": {"tools": ["nosuch"]}}, "a", "a", "unknown tool 'nosuch'"),
        ({"a": {"tools": ["agent:ghost"]}}, "a", "a", "unknown agent 'ghost'"),
        ({"a": {"tools": ["agent:b"]}, "b": {"tools": ["agent:a"]}}, "a", "b", "cycle a -> b -> a"),
        (
            {"a": {"tools": ["agent:b"]}, "b": {"tools": ["agent:c"]}, "c": {"tools": ["agent:b"]}},
            "a",
            "c",
            "cycle b -> c -> b",
        ),
        ({"a": {"tools": ["agent:a"]}}, "a", "a", "cycle a -> a"),
        ({"a": {"tools": ["mcp:nowhere"]}}, "a", "a", "unknown MCP server 'nowhere'"),
        ({"a": {"reasoning": "telepathy"}}, "a", "a", "unknown reasoning 'telepathy'"),
        ({"a": {"settings": {"max_rounds": 0}}}, "a", "a", "max_rounds"),
        ({"a": {"tools": ["web_search"]}}, "a", "a", "'web_search' is not configured"),
        ({"a": {"tools": ["agent:b"]}, "b": {"tools": ["nosuch"]}}, "a", "b", "unknown tool 'nosuch'"),
        ({"a": {}}, "zed", "zed", "no such agent is declared (declared: a)"),
        ({"bad name!": {}}, "bad name!", "bad name!", "names are"),
    ],
)
def test_bad_references_are_load_time_errors_naming_the_agent(
    tmp_path, registry, agents, requested, blamed, fragment
) -> None:
    settings = settings_with(tmp_path, agents)
    with pytest.raises(AgentConfigError) as info:
        Agent.from_config(requested, settings, llm=ScriptedProvider(replies=[]), registry=registry)
    err = info.value
    assert err.code == "agent.config_invalid" and isinstance(err, ConfigError)
    assert err.details["agent"] == blamed and f"agent {blamed!r}" in err.message
    assert fragment in err.message


def test_check_agents_checks_every_declaration(tmp_path, registry) -> None:
    settings = settings_with(tmp_path, {"good": {}, "bad": {"tools": ["agent:nobody"]}})
    check_agents(settings, ["good"], registry)  # only what "good" reaches
    with pytest.raises(AgentConfigError, match="'bad'"):
        check_agents(settings, None, registry)


def test_agents_file_adds_declarations(tmp_path, registry) -> None:
    (tmp_path / "agents.toml").write_text(
        '[agents.helper]\ndescription = "Helps"\nreasoning = "qa"\n', encoding="utf-8"
    )
    settings = settings_with(tmp_path, {"main": {"tools": ["agent:helper"]}}, agents_file="agents.toml")
    assert set(declared_agents(settings)) == {"main", "helper"}
    agent = Agent.from_config("main", settings, llm=ScriptedProvider(replies=[]), registry=registry)
    assert agent.tools["run_agent"].description == "Helps"

    dup = settings_with(tmp_path, {"helper": {}}, agents_file="agents.toml")
    with pytest.raises(AgentConfigError, match="declared twice"):
        declared_agents(dup)
    with pytest.raises(AgentConfigError, match="agents file not found"):
        declared_agents(settings_with(tmp_path, {}, agents_file="missing.toml"))
    (tmp_path / "other.toml").write_text("[llm]\nmodel = 'x'\n", encoding="utf-8")
    with pytest.raises(AgentConfigError, match=r"only \[agents.NAME\] tables"):
        declared_agents(settings_with(tmp_path, {}, agents_file="other.toml"))
    (tmp_path / "typo.toml").write_text("[agents.h]\ntool = ['x']\n", encoding="utf-8")
    with pytest.raises(AgentConfigError, match=r"agent 'h'.*tool"):
        declared_agents(settings_with(tmp_path, {}, agents_file="typo.toml"))


def test_agents_come_from_the_toml_file_and_unknown_keys_are_refused(tmp_path) -> None:
    toml = tmp_path / "reasonloop.toml"
    toml.write_text(
        'agent_max_depth = 2\n[agents.writer]\nreasoning = "toolcall"\ntools = ["agent:helper"]\n'
        "[agents.helper]\nsettings = { max_rounds = 2 }\n",
        encoding="utf-8",
    )
    settings = load_settings(toml)
    assert settings.agent_max_depth == 2 and settings.agents["helper"].settings == {"max_rounds": 2}
    agent = Agent.from_config("writer", settings, llm=ScriptedProvider(replies=[]))
    assert agent.tools["run_agent"].max_depth == 2
    toml.write_text('[agents.writer]\ntoolz = ["x"]\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"agents\.writer\.toolz: unknown key"):
        load_settings(toml)


def mcp_settings(tmp_path: Path, **agent: object) -> Settings:
    servers = [
        {"name": "catalog", "command": sys.executable, "args": [str(MCP_SERVER), "stdio"]},
        {
            "name": "broken",
            "command": sys.executable,
            "args": ["-c", "import sys; sys.exit(3)"],
            "connect_timeout_s": 5,
        },
    ]
    return settings_with(tmp_path, {"librarian": {"reasoning": "toolcall", **agent}}, tools={"mcp_servers": servers})


@pytest.mark.integration
async def test_mcp_server_tools_join_the_agent_and_a_dead_server_is_reported(tmp_path) -> None:
    settings = mcp_settings(tmp_path, tools=["mcp:catalog", "mcp:broken"])
    query = {"query": {"title_words": ["rome"], "genre": "history"}, "limit": 2}
    llm = ScriptedProvider(replies=[call("find_books", "m1", **query), "Two books."])
    resources = AgentResources()
    try:
        agent = Agent.from_config("librarian", settings, llm=llm, resources=resources)
        assert agent.tools == {}  # discovered on the first run
        events = [e async for e in agent.stream("books about Rome?")]
        notes = [e.message for e in events if isinstance(e, Progress)]
        assert any("'broken'" in n for n in notes)
        result = next(e for e in events if isinstance(e, ToolResult))
        assert result.error is None and result.output == "2 history books about rome"
        assert events[-1].text == "Two books."
        assert {s.name for s in llm.tools_seen[0]} >= {"find_books", "hang", "explode", "whoami"}

        # a second agent of the same owner shares the MCP session
        other_llm = ScriptedProvider(replies=[call("whoami", "m2"), "done"])
        other = Agent.from_config("librarian", settings, llm=other_llm, resources=resources)
        again = [e async for e in other.stream("who?")]
        assert next(e for e in again if isinstance(e, ToolResult)).error is None
        manager = resources.mcp_manager(settings)
        assert manager.connections["catalog"].connects == 1
    finally:
        await resources.aclose()


@pytest.mark.integration
async def test_an_agent_only_gets_the_servers_it_names(tmp_path) -> None:
    settings = mcp_settings(tmp_path, tools=["mcp:catalog"])
    llm = ScriptedProvider(replies=["no tools needed"])
    agent = Agent.from_config("librarian", settings, llm=llm)
    try:
        events = [e async for e in agent.stream("hi")]
        assert not any(isinstance(e, Progress) and "broken" in e.message for e in events)
        assert "find_books" in agent.tools
    finally:
        await agent.aclose()  # the agent made its own MCP client: closing it stops the server


PLUGIN = textwrap.dedent('''
    from reasonloop.tools.base import tool


    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key}"
''')


def write_cli_config(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "agents_cli_tools.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    writer = script(tmp_path, "writer", [call("run_agent", "p1", query="sky"), "PARENT SAYS BLUE"])
    researcher = script(tmp_path, "researcher", [call("lookup", "s1", key="sky"), "SUB SAYS BLUE"])
    (tmp_path / "reasonloop.toml").write_text(
        textwrap.dedent(f"""
            [plugins.paths]
            tool = ["agents_cli_tools:lookup"]
            [agents.writer]
            reasoning = "toolcall"
            llm = "{writer}"
            tools = ["agent:researcher"]
            [agents.researcher]
            reasoning = "toolcall"
            llm = "{researcher}"
            tools = ["lookup"]
            description = "Looks things up"
        """),
        encoding="utf-8",
    )


def test_ask_agent_runs_the_declared_agent(capsys, tmp_path, monkeypatch) -> None:
    write_cli_config(tmp_path, monkeypatch)
    code, out, err = cli(capsys, "ask", "What colour is the sky?", "--agent", "writer")
    assert code == 0, err
    lines = out.splitlines()
    assert '→ run_agent {"query": "sky"}' in lines
    assert '  → lookup {"key": "sky"}' in lines  # the sub-agent's steps, indented
    assert "Answer: PARENT SAYS BLUE" in lines
    assert not any(line.startswith("Answer:") and "SUB" in line for line in lines)
    sys.modules.pop("agents_cli_tools", None)


def test_ask_agent_events_keep_the_sub_answer_nested(capsys, tmp_path, monkeypatch) -> None:
    write_cli_config(tmp_path, monkeypatch)
    code, out, _ = cli(capsys, "ask", "q", "--agent", "writer", "--events")
    events = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and [e["seq"] for e in events] == list(range(1, len(events) + 1))
    answers = [(e["depth"], e["text"]) for e in events if e["type"] == "answer"]
    assert answers == [(1, "SUB SAYS BLUE"), (0, "PARENT SAYS BLUE")]
    started = [e for e in events if e["type"] == "run_started"]
    assert started[1]["depth"] == 1 and started[1]["parent_call_id"] == "p1"
    sys.modules.pop("agents_cli_tools", None)


def test_ask_agent_errors_name_the_agent(capsys, tmp_path, monkeypatch) -> None:
    write_cli_config(tmp_path, monkeypatch)
    code, _, err = cli(capsys, "ask", "q", "--agent", "nosuch")
    assert code == 1 and "agent.config_invalid" in err and "'nosuch'" in err
    code, _, err = cli(capsys, "ask", "q", "--agent", "writer", "--tools", "lookup")
    assert code == 1 and "--agent takes its tools" in err
    sys.modules.pop("agents_cli_tools", None)


async def test_run_started_of_a_declared_sub_agent_names_its_strategy(tmp_path, registry) -> None:
    settings = settings_with(tmp_path, {"w": {"reasoning": "toolcall", "tools": ["agent:r"]}, "r": {"reasoning": "qa"}})
    llm = ScriptedProvider(replies=[call("run_agent", "p1", query="hi"), "sub", "top"])
    events = [e async for e in Agent.from_config("w", settings, llm=llm, registry=registry).stream("q")]
    nested = next(e for e in events if isinstance(e, RunStarted) and e.depth == 1)
    assert nested.reasoning == "qa" and nested.parent_call_id == "p1"


def test_chat_agent_talks_with_the_declared_agent(capsys, tmp_path, monkeypatch) -> None:
    write_cli_config(tmp_path, monkeypatch)
    inputs = iter(["What colour is the sky?", "/exit"])
    monkeypatch.setattr("reasonloop.cli.ask_cmd.console.input", lambda prompt="": next(inputs))
    code, out, err = cli(capsys, "chat", "--agent", "writer")
    assert code == 0, err
    assert "Answer: PARENT SAYS BLUE" in out and '  → lookup {"key": "sky"}' in out
    sys.modules.pop("agents_cli_tools", None)
