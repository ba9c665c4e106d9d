"""Which tool calls ask for approval: the policy of each tool, from the agent, [approvals], MCP servers and side effects."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from mcp_types import Tool as MCPToolSpec
from mcp_types import ToolAnnotations

from reasonloop.config import ApprovalSettings, MCPServerSettings
from reasonloop.errors import ApprovalInvalid
from reasonloop.tools.approval import ApprovalPolicies, Decision, GatedTool, GatedTools, check_answer
from reasonloop.tools.base import tool
from reasonloop.tools.http_request import HttpRequestTool
from reasonloop.tools.mcp_client import MCPTool


@tool
async def lookup(key: str) -> str:
    """Look a key up."""
    return key


def mcp_tool(name: str, read_only: bool | None = None, server: str = "tickets") -> MCPTool:
    connection = SimpleNamespace(name=server, settings=MCPServerSettings(name=server, command="x"))
    annotations = None if read_only is None else ToolAnnotations(read_only_hint=read_only)
    spec = MCPToolSpec(name=name, input_schema={"type": "object", "properties": {}}, annotations=annotations)
    return MCPTool(connection, spec)  # type: ignore[arg-type]


def policy(settings: ApprovalSettings, tool_, agent=None, servers=None) -> str:
    return ApprovalPolicies(settings, agent, servers).policy(tool_)[0]


def test_never_is_the_default_for_every_tool():
    for t in (lookup, HttpRequestTool(), mcp_tool("close_ticket")):
        assert policy(ApprovalSettings(), t) == "never"
    assert not ApprovalPolicies(ApprovalSettings()).asks_ever


def test_tools_with_side_effects_take_the_side_effects_policy_when_it_is_set():
    settings = ApprovalSettings(side_effects="always")
    assert policy(settings, HttpRequestTool()) == "always"
    assert policy(settings, mcp_tool("close_ticket")) == "always"  # not marked read-only
    assert policy(settings, mcp_tool("close_ticket", read_only=False)) == "always"
    assert policy(settings, mcp_tool("list_tickets", read_only=True)) == "never"
    assert policy(settings, lookup) == "never"


def test_an_mcp_servers_tools_follow_its_entry_or_its_name_in_the_tables():
    assert policy(ApprovalSettings(), mcp_tool("a"), servers={"tickets": "once"}) == "once"
    assert policy(ApprovalSettings(tools={"mcp:tickets": "always"}), mcp_tool("a")) == "always"
    assert policy(ApprovalSettings(tools={"mcp:other": "always"}), mcp_tool("a")) == "never"


def test_the_first_that_names_the_tool_wins():
    settings = ApprovalSettings(default="always", side_effects="always", tools={"a": "once", "mcp:tickets": "never"})
    assert policy(settings, mcp_tool("a"), agent={"a": "never"}) == "never"  # the agent's, by name
    assert policy(settings, mcp_tool("b"), agent={"mcp:tickets": "once"}) == "once"  # the agent's, by server
    assert policy(settings, mcp_tool("a")) == "once"  # [approvals] tools, by name before server
    assert policy(settings, mcp_tool("b"), servers={"tickets": "always"}) == "never"  # the table before the entry
    assert policy(settings, lookup) == "always"  # default
    reason = ApprovalPolicies(settings, {"a": "never"}).policy(mcp_tool("a"))[1]
    assert reason == "the agent's approvals ask for a"


def test_only_tools_that_may_ask_are_wrapped_and_those_joining_later_too():
    gates = GatedTools({"lookup": lookup}, ApprovalPolicies(ApprovalSettings(tools={"close": "always"})), approver=None)
    assert gates["lookup"] is lookup
    gates.setdefault("close", mcp_tool("close"))
    assert isinstance(gates["close"], GatedTool) and gates["close"].emits_events
    assert gates["close"].spec().name == "close"


@pytest.mark.parametrize(
    ("decision", "said"),
    [
        (Decision(decision="modify", arguments={"key": 1}), "key: 1 is not of type 'string'"),
        (Decision(decision="modify", arguments={"key": "a", "more": 1}), "Additional properties"),
        (Decision(decision="modify"), "'modify' needs the arguments"),
        (Decision(decision="reject", arguments={}), "only with 'modify'"),
    ],
)
def test_answers_that_do_not_fit_are_refused_naming_the_problem(decision, said):
    with pytest.raises(ApprovalInvalid) as refused:
        check_answer(decision, lookup.spec().parameters)
    assert said in refused.value.message


def test_answers_that_fit_are_taken():
    schema = lookup.spec().parameters
    assert check_answer(Decision(decision="modify", arguments={"key": "b"}), schema).arguments == {"key": "b"}
    assert check_answer(Decision(decision="confirm"), schema).decision == "confirm"
    assert check_answer(Decision(decision="modify", arguments={"x": 1}), {"type": "nonsense"}).arguments == {"x": 1}
