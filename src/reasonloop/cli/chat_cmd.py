"""``reasonloop chat``: talk with your documents; the conversation is kept between questions.

A line starting with ``/`` is a command (``/help``, ``/reset``, ``/quit``), never a question. Each
answer streams its trace as ``reasonloop ask`` does (:mod:`reasonloop.cli.ask_cmd`).
"""

from __future__ import annotations

from contextlib import AsyncExitStack

from reasonloop.cli.approve import approve_with
from reasonloop.cli.ask_cmd import (
    AgentOpt,
    ApproveOpt,
    BudgetSecondsOpt,
    BudgetTokensOpt,
    ConversationOpt,
    InstrOpt,
    KBOpt,
    LLMOpt,
    ModeOpt,
    ReasoningOpt,
    SetOpt,
    ToolsOpt,
    UserOpt,
    build_agent,
    close_agent,
    consume,
    open_kb,
    run_budget,
    tracing,
)
from reasonloop.cli.console import console, escape
from reasonloop.cli.root import app
from reasonloop.cli.trace_view import TraceRenderer

__all__ = ["CHAT_COMMANDS", "chat"]


CHAT_COMMANDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("/help",), "list these commands"),
    (("/reset",), "start a new conversation: the history is cleared"),
    (("/quit", "/exit"), "leave (so does Ctrl-D)"),
)
"""The commands of ``reasonloop chat``: a line starting with ``/`` is one of them, never a question
(an unknown one is refused with this list and not sent to the model)."""


def _chat_help() -> None:
    for names, what in CHAT_COMMANDS:
        console.print(f"  [bold]{escape(', '.join(names))}[/]  {escape(what)}", highlight=False)


@app.command("chat")
def chat(
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
    approve: ApproveOpt = None,
) -> None:
    """Talk with your documents; the conversation is kept.

    A line starting with / is a command, not a question: /help lists the commands, /reset starts
    a new conversation (the history is cleared), /quit or /exit (or Ctrl-D) leaves. An unknown
    command is refused and never sent to the model.
    """
    import asyncio

    from reasonloop.agents import AgentResources
    from reasonloop.llm.base import Message

    history: list[Message] = []
    with tracing(), asyncio.Runner() as runner:
        stack = AsyncExitStack()
        try:
            kb = runner.run(open_kb(kb_dir, stack))
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
            how = f"mode {mode} ({agent.reasoning_id})" if mode else agent.reasoning_id
            approve_with(agent, approve, agent_name)
            console.print(
                f"[dim]reasonloop chat · {escape(how)} · {escape(agent.llm.name)} · "
                "/help for commands, /quit to leave[/]"
            )
            while True:
                try:
                    question = console.input("[bold green]you>[/] ").strip()
                except (EOFError, KeyboardInterrupt):
                    console.print()
                    break
                if not question:
                    continue
                if question.startswith("/"):
                    command = question.split()[0].lower()
                    if command in ("/quit", "/exit"):
                        break
                    if command == "/reset":
                        history.clear()
                        console.print("[dim]a new conversation starts: the history is cleared[/]")
                    elif command == "/help":
                        _chat_help()
                    else:
                        console.print(
                            f"[yellow]unknown command {escape(command)}[/]; the commands are:", highlight=False
                        )
                        _chat_help()
                    continue
                answer, _ = runner.run(
                    consume(agent, question, history, TraceRenderer(), user_id=user, conversation_id=conversation)
                )
                if answer:
                    history += [Message.user(question), Message.assistant(answer)]
            runner.run(close_agent(agent, resources))
        finally:
            runner.run(stack.aclose())
