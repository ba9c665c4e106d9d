"""Native tool calling: the model asks for tools in structured calls, several per turn.

Each round the model either answers in text or returns tool calls; the calls of one turn
run concurrently and their results go back as ``tool`` messages, one per call. Budgets end
the loop with one last tool-less call. A model without native tool calling is served by
the ReAct loop instead, with the same tools.

Calls a model (or its server) writes into the text instead are read as calls
(:mod:`reasonloop.reasoning.formats.toolcall_text`); ``<think>`` blocks never reach the answer. A turn
that cannot be read (an empty reply, a tag that is not JSON, native calls whose arguments are
not JSON) is answered with what was wrong; three in a row end the run with
:class:`~reasonloop.errors.FormatNotFollowed`, which suggests the ReAct text format.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import aclosing
from typing import ClassVar

from reasonloop.events import Event, Progress, Thought
from reasonloop.llm.base import Message, ToolCallPart
from reasonloop.reasoning.base import LoopSettings, Reasoning
from reasonloop.reasoning.formats.format_watch import FormatWatch
from reasonloop.reasoning.formats.language import detect_language
from reasonloop.reasoning.formats.prompts import conversation, render, system_prompt, tool_spec
from reasonloop.reasoning.formats.toolcall_text import ProseStream, read_text_turn
from reasonloop.reasoning.steps.budget import BudgetTracker
from reasonloop.reasoning.steps.finish import close, forced_answer, guard_armed
from reasonloop.reasoning.steps.llmcall import Turn, llm_turn
from reasonloop.reasoning.steps.toolexec import ToolRound
from reasonloop.registry import PluginInfo

__all__ = ["ToolCallReasoning", "ToolCallSettings"]


class ToolCallSettings(LoopSettings):
    """Tool-calling settings: the loop budget and guard."""


class ToolCallReasoning(Reasoning):
    """Native tool calls (several per turn, run concurrently); results sent back as tool messages."""

    info: ClassVar[PluginInfo] = PluginInfo.declared("reasoning", "toolcall")
    Settings = ToolCallSettings
    uses_tools = True

    async def stream(self, question: str) -> AsyncIterator[Event]:
        ctx, settings = self.ctx, self.settings
        if ctx.tools and not ctx.llm.capabilities.native_tools:
            from reasonloop.reasoning.strategies.react import ReActReasoning

            yield Progress(message=f"{ctx.llm.name} has no native tool calling: using the ReAct text format")
            fallback = ReActReasoning(ReActReasoning.Settings(**settings.model_dump()), ctx)
            async for event in fallback.stream(question):
                yield event
            return

        language = ctx.language or detect_language(question)
        tracker = BudgetTracker(ctx.budget or settings.budget(), ctx.usage, ctx.scope.pauses)
        specs = [tool_spec(tool) for tool in ctx.tools.values()] or None
        messages = conversation(system_prompt("toolcall", language, ctx.instructions), ctx.history, question)

        watch = FormatWatch("toolcall", ctx.llm)
        while tracker.exhausted() is None:
            tracker.start_round()
            turn = Turn()
            deltas = None if guard_armed(settings, ctx) else ProseStream().feed
            async for event in llm_turn(ctx.llm, messages, turn, tracker, tools=specs, deltas=deltas):
                yield event
            if turn.cut_short:
                break
            read = read_text_turn(turn.text, turn.calls, ctx.tools, f"text_{tracker.rounds}")
            if read.problem is not None:
                watch.unreadable(read.problem)
                if not turn.calls:  # nothing to run: say what was wrong and ask again
                    yield Progress(message=f"the model's reply could not be read ({read.problem}): asking again")
                    retry = render("toolcall_retry", language, problem=read.problem, tool_names=", ".join(ctx.tools))
                    messages.extend([Message.assistant(turn.text.strip() or "(an empty reply)"), Message.user(retry)])
                    continue
            else:
                watch.readable()
            if read.answer is not None:
                yield close(ctx, settings, tracker, read.answer, language, "final")
                return
            turn.calls = read.calls
            if read.thought:
                yield Thought(text=read.thought)

            if len(turn.calls) > 1:  # a reused call id would answer two calls with one message
                seen: set[str] = set()
                for n, call in enumerate(turn.calls):
                    if call.call_id in seen:
                        call.call_id = f"{call.call_id}_{n}"
                    seen.add(call.call_id)
            messages.append(
                Message.assistant(
                    read.said, [ToolCallPart(id=c.call_id, name=c.tool, arguments=c.arguments) for c in turn.calls]
                )
            )
            tools = ToolRound(ctx, tracker, turn.calls, settings.max_evidence_tokens)
            # aclosing: if our consumer closes us mid-call, the tools are cancelled now, not at GC.
            async with aclosing(tools.run()) as tool_events:
                async for event in tool_events:
                    yield event
            outputs = tools.outputs
            for call, out in zip(turn.calls, outputs, strict=True):
                messages.append(Message.tool(call.call_id, out.text, name=call.tool))

        async for event in forced_answer(ctx, settings, tracker, ctx.llm, messages, language):
            yield event
