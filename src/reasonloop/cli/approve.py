"""Who approves tool calls in ``reasonloop ask`` and ``chat``: the person at the terminal, or ``--approve``.

With ``[approvals]`` (or an agent's ``approvals``) asking about a tool, each such call stops the run
and asks on the terminal: the tool, its arguments and why, then ``[c]onfirm``, ``[m]odify`` (the
arguments as a JSON object, checked against the tool's schema and asked again when they do not fit)
or ``[r]eject`` (with a reason the model reads). ``--approve all`` confirms every call and
``--approve never`` rejects every call, for scripts; ``--approve ask`` asks even when the standard
input is not a terminal (answers piped in). Without ``--approve``, a run whose standard input is
not a terminal rejects such calls, saying why: nobody could answer.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Literal

from reasonloop.cli.console import console, err_console, escape
from reasonloop.cli.root import state
from reasonloop.errors import ApprovalInvalid

if TYPE_CHECKING:
    from reasonloop.agents import Agent
    from reasonloop.approval_answers import Announce, ApprovalAsk, Decision

__all__ = ["ApproveMode", "TerminalApprover", "approve_with"]

ApproveMode = Literal["ask", "all", "never"]

_NOBODY = "nobody could approve it: the standard input is not a terminal (use --approve all or --approve ask)"


class TerminalApprover:
    """Asks the person at the terminal about each call (see the module docstring)."""

    def __init__(self) -> None:
        self._n = 0

    async def decide(self, ask: ApprovalAsk, announce: Announce) -> Decision:
        from reasonloop.approval_answers import Decision

        self._n += 1
        ask.approval_id = ask.approval_id or f"apr_{self._n}"
        await announce(ask)
        arguments = json.dumps(ask.arguments, ensure_ascii=False)
        console.print(f"[bold yellow]approve?[/] {escape(ask.tool)} {escape(arguments)} [dim]({escape(ask.reason)})[/]")
        try:
            return await self._answer(ask)
        except EOFError as exc:
            return Decision(decision="reject", reason=str(exc), by={"via": "cli"})

    async def _answer(self, ask: ApprovalAsk) -> Decision:
        from reasonloop.approval_answers import Decision, check_answer

        while True:
            choice = (await _read("[c]onfirm, [m]odify or [r]eject? ")).strip().lower()
            if choice in ("c", "confirm", "y", "yes"):
                return Decision(decision="confirm", by={"via": "cli"})
            if choice in ("r", "reject", "n", "no"):
                reason = (await _read("reason (the model reads it): ")).strip()
                return Decision(decision="reject", reason=reason, by={"via": "cli"})
            if choice in ("m", "modify"):
                given = await _read("arguments (a JSON object): ")
                try:
                    parsed = json.loads(given)
                    decision = Decision(decision="modify", arguments=parsed, by={"via": "cli"})
                    return check_answer(decision, ask.schema)
                except ApprovalInvalid as exc:
                    err_console.print(f"[red]{escape(exc.message)}[/]", highlight=False)
                except ValueError as exc:  # not JSON, or not an object
                    err_console.print(f"[red]not a JSON object ({escape(str(exc))})[/]", highlight=False)
                continue
            err_console.print("[yellow]answer c, m or r[/]")


async def _read(prompt: str) -> str:
    """A line of the standard input, read off the event loop.

    Raises:
        EOFError: the standard input has ended.
    """
    import asyncio  # the command line starts without it (tests/perf/test_startup_imports.py)

    return await asyncio.to_thread(_input, prompt)


def _input(prompt: str) -> str:
    console.print(prompt, end="", markup=False, highlight=False)
    line = sys.stdin.readline()
    if not line:
        raise EOFError("the standard input ended while a tool call waited for approval")
    return line.rstrip("\n")


def approve_with(agent: Agent, mode: ApproveMode | None, agent_name: str | None) -> None:
    """Give ``agent`` the approver ``mode`` names (None: the terminal when there is one) and the
    policies of the configuration (``[approvals]``, the agent's ``approvals``, MCP servers')."""
    from reasonloop.agents.declared import declared_agents
    from reasonloop.tools.approval import ApprovalPolicies, FixedApprover

    settings = state.settings
    declared = declared_agents(settings).get(agent_name) if agent_name else None
    servers = {server.name: server.approval for server in settings.tools.mcp_servers}
    policies = ApprovalPolicies(settings.approvals, declared.approvals if declared is not None else None, servers)
    if not policies.asks_ever:
        return
    if mode is None:
        mode = "ask" if sys.stdin.isatty() else None  # type: ignore[assignment]
    if mode == "ask":
        agent.approve_with(TerminalApprover(), policies)
    elif mode == "all":
        agent.approve_with(FixedApprover("confirm", "cli", "--approve all"), policies)
    elif mode == "never":
        agent.approve_with(FixedApprover("reject", "cli", "rejected by --approve never"), policies)
    else:
        agent.approve_with(FixedApprover("reject", "cli", _NOBODY), policies)
