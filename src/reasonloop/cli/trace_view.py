"""The reasoning trace in the terminal: a run's events as ``reasonloop ask`` and ``chat`` print them.

:class:`TraceRenderer` prints each event as it comes: thoughts, tool calls with their arguments,
short observations, the answer as it streams, its citations (each one's source and page, and under
it the sentence it quotes) and a usage line; a sub-agent's steps are indented under the call that
started it, and a research run is drawn as its tree (:mod:`reasonloop.cli.research_view`). It is
the commands' view, kept apart from the commands that start the runs it shows.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from reasonloop.cli.console import console, err_console, escape, rich_console
from reasonloop.cli.research_view import ResearchTree

if TYPE_CHECKING:
    from reasonloop.events import Answer, ErrorEvent, Event, Usage

__all__ = ["OBSERVATION_CHARS", "QUOTE_CHARS", "TraceRenderer", "trim_quote"]

OBSERVATION_CHARS = 160
"""How much of an observation the trace shows (one line)."""
QUOTE_CHARS = 240
"""How much of a citation's quote (the sentence the answer rests on) is printed under its source."""


def _one_line(text: str, limit: int = OBSERVATION_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def trim_quote(text: str, limit: int = QUOTE_CHARS) -> str:
    """``text`` on one line; when longer than ``limit``, cut to ``limit - 1`` characters and ended
    with ``…``. A cut inside a word moves back to the space before it when that keeps most of the
    text (text without spaces, such as Chinese, is cut at the limit)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 1]
    if cut[-1].isalnum() and flat[limit - 1].isalnum():
        space = cut.rfind(" ")
        if space > limit * 2 // 3:
            cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


class TraceRenderer:
    """Prints a run's events as a readable live trace."""

    def __init__(self, *, show_usage: bool = True) -> None:
        self.streamed: list[str] = []
        self.answer: Answer | None = None
        self.error: ErrorEvent | None = None
        self.show_usage = show_usage
        self.started = time.monotonic()
        self.research: ResearchTree | None = None
        """The research tree of a ``research`` run (made at its first research plan)."""

    @property
    def partial(self) -> str:
        return "".join(self.streamed)

    def _end_stream(self) -> None:
        if self.streamed and not self.partial.endswith("\n"):
            console.print()

    def handle(self, event: Event) -> None:
        from reasonloop.events import (
            Answer,
            AnswerDelta,
            ApprovalDecided,
            ApprovalRequested,
            ErrorEvent,
            Judged,
            Plan,
            Progress,
            Report,
            ResearchTask,
            Route,
            RunStarted,
            Searched,
            Thought,
            ToolCall,
            ToolResult,
        )

        indent = "  " * event.depth
        if isinstance(event, RunStarted):
            if event.depth == 0:
                console.print(f"[dim]reasoning: {escape(event.ran or event.reasoning)}[/]")
            else:
                console.print(
                    f"{indent}[dim]↳ sub-agent ({escape(event.reasoning)}): {escape(_one_line(event.question))}[/]"
                )
        elif isinstance(event, Progress):
            console.print(f"{indent}[dim italic]… {escape(event.message)}[/]")
        elif isinstance(event, Route):
            chosen = f" → {event.strategy}" if event.strategy else " → answer without searching"
            wanted = f" (wanted {event.wanted})" if event.wanted else ""
            console.print(
                f"{indent}[magenta]Route:[/] {event.route}{escape(chosen)}{escape(wanted)} "
                f"[dim]by the {event.decided_by}: {escape(event.reason)}[/]"
            )
        elif isinstance(event, Thought):
            if event.plan_text:  # the plan's text: its Plan event shows it
                return
            if self.streamed and event.text.strip() == self.partial.strip():
                # The streamed text was reasoning before tool calls: already shown, not the answer.
                self._end_stream()
                self.streamed.clear()
                return
            console.print(f"{indent}[magenta]Thought:[/] {escape(event.text)}")
        elif isinstance(event, Plan) and (self.research is not None or ResearchTree.is_research_plan(event)):
            self.research = self.research or ResearchTree()
            self.research.plan(event, indent)
        elif isinstance(event, (ResearchTask, Judged, Report)):
            self.research = self.research or ResearchTree()
            if isinstance(event, ResearchTask):
                self.research.task(event, indent)
            elif isinstance(event, Judged):
                self.research.judged(event, indent)
            else:
                if not event.partial and event.depth == 0:
                    self._end_stream()
                self.research.report(event, indent)
        elif isinstance(event, Plan):
            console.print(f"{indent}[magenta]Plan:[/]" + (f" (attempt {event.attempt})" if event.attempt > 1 else ""))
            for step in event.steps:
                console.print(f"{indent}  {escape(_one_line(step.line()))}")
        elif isinstance(event, ToolCall):
            args = json.dumps(event.input, ensure_ascii=False)
            console.print(f"{indent}[cyan]→ {escape(event.tool)}[/] {escape(args)}")
        elif isinstance(event, ApprovalRequested):
            console.print(f"{indent}[yellow]⏸ {escape(event.tool)} waits for approval[/]")
        elif isinstance(event, ApprovalDecided):
            said = f": {event.reason}" if event.reason else ""
            console.print(f"{indent}[yellow]▶ {escape(event.decision)}[/] [dim]{escape(said)}[/]")
        elif isinstance(event, Searched):
            found = f"{event.hits} passage{'' if event.hits == 1 else 's'}"
            console.print(f"{indent}[cyan]⌕ search[/] {escape(_one_line(event.query))} [dim]→ {found}[/]")
        elif isinstance(event, ToolResult):
            if event.error:
                console.print(
                    f"{indent}[red]← {escape(event.error.get('type', 'error'))}:[/] "
                    f"{escape(_one_line(str(event.error.get('error', ''))))}"
                )
            else:
                console.print(f"{indent}[green]←[/] [dim]{escape(_one_line(event.output))}[/]")
        elif isinstance(event, AnswerDelta):
            if event.depth == 0:
                if not self.streamed:
                    console.print("[bold]Answer:[/] ", end="")
                self.streamed.append(event.text)
                console.print(event.text, end="", markup=False, highlight=False)
        elif isinstance(event, Answer) and event.depth == 0:
            self._show_answer(event)
        elif isinstance(event, ErrorEvent) and event.depth == 0:
            self._end_stream()
            self.error = event
            err_console.print(f"[bold red]error[/] {escape(f'[{event.code}] {event.message}')}", highlight=False)
            self._show_usage(event.usage, "error")

    def _show_answer(self, answer: Answer) -> None:
        from rich.text import Text

        self.answer = answer
        if self.partial.strip() != answer.text.strip():
            self._end_stream()
            console.print("[bold]Answer:[/] " + escape(answer.text))
        else:
            self._end_stream()
        for c in answer.citations:
            where = (c.source or c.title or c.document_id or "") + (f", p. {c.page}" if c.page is not None else "")
            console.print(f"  [blue]\\[{c.marker}][/] {escape(where)}", highlight=False)
            if c.quote.strip():
                # Indented under its source, wrapped lines too; printed as text (no markup in it).
                quote = Text(f"“{trim_quote(c.quote)}”", style="dim")
                for line in quote.wrap(rich_console(console), max(console.width - 6, 20)):
                    line.rstrip()
                    console.print(Text("      ") + line)
        self._show_usage(answer.usage, answer.stop_reason)

    def _show_usage(self, u: Usage, stop_reason: str) -> None:
        if self.show_usage:
            console.print(
                f"[dim]{u.llm_calls} LLM calls · {u.prompt_tokens}+{u.completion_tokens} tokens · "
                f"{u.tool_calls} tool calls · {u.searches} searches · {stop_reason} · "
                f"{time.monotonic() - self.started:.1f}s[/]"
            )

    def stopped(self) -> None:
        """The run was interrupted: show what had been answered so far."""
        self._end_stream()
        err_console.print("[yellow]stopped[/]")
        if self.partial:
            console.print("[bold]Partial answer:[/] " + escape(self.partial))
