"""The research tree in the terminal: a research run's plan, its sub-agents' states and the judge.

:class:`ResearchTree` follows a run's ``plan`` (steps of tool ``research``), ``research_task``,
``judged`` and ``report`` events. Each change prints one line under the tree's branches as it
happens (``▶`` running with its budget, ``✓`` done with its findings, ``✗`` failed, ``⊘`` cancelled,
``⚖`` the judge's decision); after each decision of the judge, and when the report is written, the
whole tree is drawn again as it stands (rounds → questions → state), so a long run's shape is
readable at a glance.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reasonloop.cli.console import console, escape

if TYPE_CHECKING:
    from rich.tree import Tree

    from reasonloop.events import Judged, Plan, Report, ResearchTask

__all__ = ["ResearchTree"]

FINDING_CHARS = 140
"""How much of a finding a line shows."""

_MARKS = {
    "queued": "[dim]·[/]",
    "running": "[yellow]▶[/]",
    "done": "[green]✓[/]",
    "failed": "[red]✗[/]",
    "cancelled": "[dim]⊘[/]",
}


def _short(text: str, limit: int = FINDING_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ResearchTree:
    """What a research run has planned, researched and decided so far; prints it as it changes."""

    def __init__(self) -> None:
        self.rounds: dict[int, list[str]] = {}
        """Step ids by round, in plan order."""
        self.questions: dict[str, str] = {}
        self.status: dict[str, str] = {}
        self.findings: dict[str, str] = {}
        self.decisions: dict[int, Judged] = {}
        self.drawn = False
        """The tree was drawn and has not changed since."""

    @staticmethod
    def is_research_plan(plan: Plan) -> bool:
        return bool(plan.steps) and all(step.tool == "research" for step in plan.steps)

    def plan(self, plan: Plan, indent: str = "") -> None:
        steps = self.rounds.setdefault(plan.attempt, [])
        label = "Research plan" if plan.attempt == 1 else f"Follow-up research (round {plan.attempt})"
        console.print(f"{indent}[magenta]{label}:[/]")
        for i, step in enumerate(plan.steps):
            self.drawn = False
            steps.append(step.id)
            self.questions[step.id] = step.input
            self.status[step.id] = "queued"
            branch = "└─" if i == len(plan.steps) - 1 else "├─"
            console.print(f"{indent}  {branch} {step.id} {escape(_short(step.input))}")

    def task(self, event: ResearchTask, indent: str = "") -> None:
        self.drawn = False
        self.status[event.step] = event.status
        self.questions.setdefault(event.step, event.question)
        self.rounds.setdefault(event.round, [])
        if event.step not in self.rounds[event.round]:
            self.rounds[event.round].append(event.step)
        mark = _MARKS.get(event.status, "?")
        head = f"{indent}{mark} {event.step}"
        if event.status == "running":
            budget = [f"{event.budget_tool_calls} tool calls"]
            if event.budget_tokens is not None:
                budget.insert(0, f"{event.budget_tokens} tokens")
            console.print(f"{head} researching: {escape(_short(event.question))} [dim]({', '.join(budget)})[/]")
        elif event.status == "done":
            self.findings[event.step] = event.findings
            cited = len(event.citations)
            console.print(
                f"{head} [dim]{escape(_short(event.findings))} ({cited} citation{'' if cited == 1 else 's'})[/]"
            )
        else:
            console.print(f"{head} [dim]{event.status}: {escape(_short(event.note))}[/]")

    def judged(self, event: Judged, indent: str = "") -> None:
        self.decisions[event.round] = event
        self.drawn = False
        said = event.reason or event.contradiction
        line = f"{indent}[magenta]⚖ judge (round {event.round}):[/] [bold]{event.outcome}[/]"
        if said:
            line += f" — {escape(_short(said))}"
        console.print(line)
        for gap in event.gaps:
            console.print(f"{indent}  [dim]missing:[/] {escape(_short(gap))}")
        if event.fallback:
            console.print(f"{indent}  [yellow]{escape(event.fallback)}[/]")
        self.draw(indent)

    def report(self, event: Report, indent: str = "") -> None:
        if event.partial:
            return
        if not self.drawn:
            self.draw(indent)
        sections = len(event.sections)
        console.print(
            f"{indent}[magenta]Report:[/] {sections} section{'' if sections == 1 else 's'}, "
            f"{len(event.citations)} citations, {len(event.unestablished)} not established"
        )

    def tree(self) -> Tree:
        """The research as it stands: rounds, their questions with their state, the judge's decisions."""
        from rich.tree import Tree  # rich loads when a tree is drawn, not when ``--help`` lists the commands

        root = Tree("[bold]Research[/]")
        for round_no in sorted(self.rounds):
            branch = root.add(f"round {round_no}")
            for step in self.rounds[round_no]:
                status = self.status.get(step, "queued")
                node = branch.add(f"{_MARKS.get(status, '?')} {step} {escape(_short(self.questions.get(step, '')))}")
                if step in self.findings:
                    node.add(f"[dim]{escape(_short(self.findings[step]))}[/]")
            decision = self.decisions.get(round_no)
            if decision is not None:
                branch.add(f"[magenta]⚖ {decision.outcome}[/]")
        return root

    def draw(self, indent: str = "") -> None:
        console.print(self.tree())
        self.drawn = True
