"""ReAct: reason and act in plain text (Yao et al., 2022), for any model.

Each round the model writes ``Thought / Action / Action Input``; generation stops at
``Observation:`` so the model never invents one; the tool runs and its result is sent back
as the observation. The loop ends with ``Final Answer:``, with text that is not a ReAct turn
at all (taken as the direct answer), or with a budget, after which one last tool-less call
answers from what was gathered. A turn that tries the format and cannot be read is answered
with what was wrong and the format; three such turns in a row end the run with
:class:`~reasonloop.errors.FormatNotFollowed` (:mod:`reasonloop.reasoning.formats.format_watch`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from functools import partial
from typing import ClassVar

from reasonloop.events import Event, Progress, Thought
from reasonloop.llm.base import Message
from reasonloop.reasoning.base import LoopSettings, Reasoning
from reasonloop.reasoning.formats.answer_spotter import AnswerSpotter
from reasonloop.reasoning.formats.format_watch import FormatWatch
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.planned_call import PlannedCall, coerce_input
from reasonloop.reasoning.formats.prompts import conversation, describe_tools, render, system_prompt
from reasonloop.reasoning.formats.react_parser import cut_observation, parse_react
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.finish import close, forced_answer, guard_armed
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.toolexec import ToolRound
from reasonloop.registry import PluginInfo
from reasonloop.tools.base import Tool

__all__ = ["ReActReasoning", "ReActSettings"]

STOP = ["Observation:", "\nObservation", "观察：", "Observation："]
"""Where generation stops: the observation is ours to write."""


class ReActSettings(LoopSettings):
    """ReAct settings: the loop budget and guard."""


class ReActReasoning(Reasoning):
    """Thought / Action / Observation loop in plain text; works with any model."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("reasoning", "react")
    Settings = ReActSettings
    uses_tools = True

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        language = ctx.language or detect_language(question)
        tracker = BudgetTracker(ctx.budget or settings.budget(), ctx.usage, ctx.scope.pauses)
        system = system_prompt(
            "react",
            language,
            ctx.instructions,
            tools=describe_tools(ctx.tools.values()),
            tool_names=", ".join(ctx.tools),
        )
        messages = conversation(system, ctx.history, f"Question: {question}")
        watch = FormatWatch("react", ctx.llm)

        while tracker.exhausted() is None:
            tracker.start_round()
            turn = Turn()
            spotter = None if guard_armed(settings, ctx) else AnswerSpotter()
            early: list[Thought] = []
            prelude = partial(_thought_first, spotter, early) if spotter else None
            async for event in llm_turn(
                ctx.llm, messages, turn, tracker, stop=STOP, deltas=spotter.feed if spotter else None, prelude=prelude
            ):
                yield event
            if turn.cut_short:
                break
            step = parse_react(turn.text)
            if step.thought and not early:
                yield Thought(text=step.thought)
            if step.kind == "unreadable":
                problem = step.problem or "unreadable"
                watch.unreadable(problem)
                yield Progress(message=f"the model's reply could not be read ({problem}): asking again")
                said = cut_observation(turn.text).rstrip() or "(an empty reply)"
                retry = render("react_retry", language, problem=problem, tool_names=", ".join(ctx.tools))
                messages.extend([Message.assistant(said), Message.user(retry)])
                continue
            watch.readable()
            if step.kind != "action":
                yield close(ctx, settings, tracker, step.text_answer(), language, "final")
                return

            tool = self._tool(step.action or "")
            call = PlannedCall(
                call_id=f"react_{tracker.rounds}",
                tool=tool.name if tool else step.action or "",
                arguments=coerce_input(tool, step.action_input) if tool else _as_arguments(step.action_input),
                raw_input=step.action_input,
            )
            tools = ToolRound(ctx, tracker, [call], settings.max_evidence_tokens)
            # aclosing: if our consumer closes us mid-call, the tools are cancelled now, not at GC.
            async with aclosing(tools.run()) as tool_events:
                async for event in tool_events:
                    yield event
            outputs = tools.outputs
            messages.append(Message.assistant(cut_observation(turn.text).rstrip()))
            messages.append(Message.user(f"Observation: {outputs[0].text}"))

        async for event in forced_answer(ctx, settings, tracker, ctx.llm, messages, language):
            yield event

    def _tool(self, name: str) -> Tool | None:
        tools = self.ctx.tools
        if name in tools:
            return tools[name]
        folded = name.lower()
        return next((t for n, t in tools.items() if n.lower() == folded), None)


def _as_arguments(raw: object) -> dict[str, object]:
    return raw if isinstance(raw, dict) else {"input": raw}


def _thought_first(spotter: AnswerSpotter, early: list[Thought]) -> list[Thought]:
    """The thought written before ``Final Answer:``, emitted ahead of the streamed answer."""
    thought = parse_react(spotter.head).thought
    if thought:
        early.append(Thought(text=thought))
    return early
