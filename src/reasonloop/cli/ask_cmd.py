"""``reasonloop ask`` and ``reasonloop chat``: answer questions with the reasoning trace streamed live.

``ask`` prints thoughts, tool calls with their arguments, short observations, the answer as
it streams, its citations (each one's source and page, and under it the sentence it quotes) and a
usage line; ``--json`` prints only the RunResult and
``--events`` one JSON event per line. ``--agent NAME`` runs an agent declared in
``[agents.NAME]``; a sub-agent's steps are shown indented under the call that started it.
``--user`` / ``--conversation`` say whose feedback (``reasonloop feedback``) guides the run.
``chat`` is a REPL that keeps the conversation. Tool calls ``[approvals]`` asks about are asked on
the terminal; ``--approve all|never`` answers them for scripts (:mod:`reasonloop.cli.approve`).
Ctrl-C stops a run cleanly: running tools and model calls are cancelled and the partial
answer is printed. The trace itself is drawn by :mod:`reasonloop.cli.trace_view`.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from reasonloop.cli.approve import ApproveMode, approve_with
from reasonloop.cli.console import console as console  # kept here: the console the terminal's answers are read on
from reasonloop.cli.console import err_console, escape
from reasonloop.cli.llm_cmd import print_model_note
from reasonloop.cli.root import app, state
from reasonloop.cli.trace_view import QUOTE_CHARS as QUOTE_CHARS
from reasonloop.cli.trace_view import TraceRenderer as TraceRenderer
from reasonloop.cli.trace_view import trim_quote as trim_quote
from reasonloop.errors import ConfigError

# asyncio, the agent stack, the events and the model types are imported where a run starts:
# the command line starts without them (benchmarks/startup.py).
if TYPE_CHECKING:
    from reasonloop.agents import Agent, AgentResources
    from reasonloop.llm.base import Message

__all__ = ["TraceRenderer", "parse_sets", "trim_quote"]


def parse_sets(pairs: list[str]) -> dict[str, Any]:
    """``["max_rounds=3", "replan=false"]`` -> settings; values are JSON when they parse, else text."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set expects key=value, got {pair!r}")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


async def open_kb(kb_dir: str | None, stack: AsyncExitStack) -> Any:
    """The knowledge base at ``kb_dir`` (or the configured path), or ``None`` when there is none or it is empty."""
    path = Path(kb_dir) if kb_dir else Path(state.settings.kb.path)
    if not path.exists():
        if kb_dir:
            raise ConfigError(f"no knowledge base at {path}")
        return None
    try:
        from reasonloop.kb.knowledge_base import KnowledgeBase
    except ModuleNotFoundError:
        return None
    kb = KnowledgeBase.open(path, settings=state.settings)
    stack.push_async_callback(kb.close)
    stats = await kb.stats()
    if not stats.chunks:
        err_console.print(f"[yellow]note:[/] the knowledge base at {escape(str(path))} is empty; answering without it")
        return None
    return kb


def build_agent(
    reasoning: str | None,
    llm_spec: str | None,
    tools: str | None,
    kb: Any,
    sets: list[str],
    instructions: list[str],
    agent_name: str | None,
    resources: AgentResources,
    mode: str | None = None,
    budget: dict[str, Any] | None = None,
) -> Agent:
    from reasonloop.agents import Agent
    from reasonloop.llm.resolve import create_llm
    from reasonloop.reasoning.base import Budget
    from reasonloop.reasoning.modes import check_choice, resolve_mode
    from reasonloop.registry import Registry

    registry = Registry(state.settings.plugins.paths)
    Registry.set_default(registry)
    if agent_name:
        if tools or sets or instructions:
            raise ConfigError("--agent takes its tools, settings and instructions from [agents.NAME]")
        if mode:
            raise ConfigError("--agent answers with its own strategy: leave out --mode")
        model = create_llm(llm_spec, state.settings, registry) if llm_spec else None
        agent = Agent.from_config(agent_name, state.settings, kb=kb, llm=model, registry=registry, resources=resources)
        if budget:
            agent.budget = Budget.model_validate(budget)
    else:
        if mode is not None:  # a bad mode is refused before the model is set up
            check_choice(reasoning, mode)
            resolve_mode(mode, registry)
        tool_ids = [t.strip() for t in (tools or "").split(",") if t.strip()]
        agent = Agent(
            reasoning,
            mode=mode,
            budget=budget or None,
            llm=create_llm(llm_spec, state.settings, registry),
            kb=kb,
            tools=tool_ids or None,
            settings=parse_sets(sets),
            instructions=instructions,
            registry=registry,
            feedback=resources.feedback_store(state.settings),
            feedback_recent=state.settings.tools.feedback.recent,
        )
        if tool_ids and not agent.strategy.uses_tools:
            err_console.print(
                f"[yellow]note:[/] {escape(agent.reasoning_id)} calls no tools, so --tools is not used; "
                "choose one that does with --reasoning react, toolcall or rewoo"
            )
    print_model_note(agent.llm)
    return agent


def run_budget(tokens: int | None, seconds: float | None) -> dict[str, Any]:
    """The ``--budget-*`` options as a budget's fields (only those given)."""
    budget: dict[str, Any] = {}
    if tokens is not None:
        budget["max_tokens"] = tokens
    if seconds is not None:
        budget["timeout_s"] = seconds
    return budget


@contextlib.contextmanager
def tracing() -> Iterator[None]:
    """OpenTelemetry tracing for the command's runs, when ``[telemetry]`` or ``OTEL_*`` ask for it
    (flushed when the command ends)."""
    from reasonloop import telemetry

    telemetry.configure(state.settings)
    try:
        yield
    finally:
        telemetry.shutdown()


async def close_agent(agent: Agent, resources: AgentResources) -> None:
    await agent.aclose()
    await resources.aclose()


async def consume(
    agent: Agent,
    question: str,
    history: list[Message],
    renderer: TraceRenderer | None,
    *,
    events_json: bool = False,
    user_id: str | None = None,
    conversation_id: str | None = None,
) -> tuple[str, bool]:
    """Stream one run to the terminal; returns (answer or partial text, whether it was stopped)."""
    import asyncio

    from reasonloop.events import Answer, AnswerDelta, ErrorEvent

    renderer = renderer or TraceRenderer()
    try:
        async for event in agent.stream(question, history=history, user_id=user_id, conversation_id=conversation_id):
            if events_json:
                print(event.to_json(), flush=True)
                if isinstance(event, AnswerDelta) and event.depth == 0:
                    renderer.streamed.append(event.text)
                elif isinstance(event, Answer) and event.depth == 0:
                    renderer.answer = event
                elif isinstance(event, ErrorEvent) and event.depth == 0:
                    renderer.error = event
            else:
                renderer.handle(event)
    except asyncio.CancelledError:
        if events_json:
            err_console.print("[yellow]stopped[/]")  # stdout stays JSON lines only
        else:
            renderer.stopped()
        return renderer.partial, True
    return (renderer.answer.text if renderer.answer else renderer.partial), False


ReasoningOpt = Annotated[
    str | None,
    typer.Option(
        "--reasoning", "-r", help="Strategy id: qa, decompose, react, toolcall, rewoo, ircot, ... (default: qa)"
    ),
]
LLMOpt = Annotated[
    str | None, typer.Option("--llm", help="provider:model, e.g. openai:gpt-4o-mini or scripted:replies.json")
]
ToolsOpt = Annotated[
    str | None, typer.Option("--tools", help="Comma-separated tool ids (docsearch is added with a KB).")
]
KBOpt = Annotated[
    str | None, typer.Option("--kb", help="Knowledge base directory (default: [kb] path, i.e. ./.reasonloop).")
]
ModeOpt = Annotated[
    str | None,
    typer.Option(
        "--mode",
        "-m",
        help="Thinking mode instead of --reasoning: fast, balanced, deep, research or auto "
        "(auto picks no search, one search, multi-hop or research per question).",
    ),
]
BudgetTokensOpt = Annotated[
    int | None, typer.Option("--budget-tokens", min=1, help="Most tokens the run may use (all its model calls).")
]
BudgetSecondsOpt = Annotated[
    float | None, typer.Option("--budget-seconds", min=0.001, help="Most seconds the run may take before it answers.")
]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="Strategy setting key=value (repeatable).")]
InstrOpt = Annotated[
    list[str] | None, typer.Option("--instruction", "-i", help="Extra instruction for the model (repeatable).")
]
AgentOpt = Annotated[
    str | None, typer.Option("--agent", "-a", help="Run the agent declared as [agents.NAME] in the config.")
]
UserOpt = Annotated[str, typer.Option("--user", help="Whose feedback guides the run (see `reasonloop feedback`).")]
ConversationOpt = Annotated[str, typer.Option("--conversation", help="Conversation id for feedback guidance.")]
ApproveOpt = Annotated[
    ApproveMode | None,
    typer.Option(
        "--approve",
        help="Tool calls [approvals] asks about: ask (on the terminal), all (confirm every one), never (reject "
        "every one). Default: ask on a terminal, else reject.",
    ),
]


@app.command("ask")
def ask(
    question: Annotated[str, typer.Argument(help="The question.")],
    reasoning: ReasoningOpt = None,
    mode: ModeOpt = None,
    budget_tokens: BudgetTokensOpt = None,
    budget_seconds: BudgetSecondsOpt = None,
    llm_spec: LLMOpt = None,
    tools: ToolsOpt = None,
    kb_dir: KBOpt = None,
    sets: SetOpt = None,
    instructions: InstrOpt = None,
    agent_name: AgentOpt = None,
    user: UserOpt = "",
    conversation: ConversationOpt = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print only the RunResult as JSON.")] = False,
    events: Annotated[bool, typer.Option("--events", help="Print each event as a JSON line.")] = False,
    approve: ApproveOpt = None,
) -> None:
    """Answer QUESTION, streaming the reasoning trace."""
    if not question.strip():
        raise typer.BadParameter("the question is empty", param_hint="QUESTION")

    async def go() -> int:
        from reasonloop.agents import AgentResources

        async with AsyncExitStack() as stack:
            kb = await open_kb(kb_dir, stack)
            resources = AgentResources()
            agent = build_agent(
                reasoning,
                llm_spec,
                tools,
                kb,
                sets or [],
                instructions or [],
                agent_name,
                resources,
                mode,
                run_budget(budget_tokens, budget_seconds),
            )
            stack.push_async_callback(close_agent, agent, resources)
            approve_with(agent, approve, agent_name)
            if as_json:
                result = await agent.run(question, user_id=user, conversation_id=conversation)
                print(result.model_dump_json(indent=2))
                return 0 if result.error is None or result.stop_reason == "guard" else 1
            renderer = TraceRenderer()
            _, stopped = await consume(
                agent, question, [], renderer, events_json=events, user_id=user, conversation_id=conversation
            )
            if stopped:
                return 130
            return 1 if renderer.error else 0

    import asyncio

    with tracing(), asyncio.Runner() as runner:
        code = runner.run(go())
    if code:
        sys.exit(code)  # typer.Exit would be swallowed when the app runs with standalone_mode=False
