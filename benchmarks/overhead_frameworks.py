"""The agents compared by ``overhead.py``, each driven by an equally trivial fake model.

Every framework gets the same job: a model that answers instantly with one call of a no-op
tool per turn for ``steps`` turns, then a plain answer. The model is a :class:`Script`
(a counter) wrapped in whatever fake-model type the framework accepts; the tool returns
``"ok"``. A builder returns ``(run, tools_called)``: ``run()`` performs one whole agent run
(a coroutine function for async frameworks) and ``tools_called()`` tells how many tool calls
the run executed, so the harness can prove each run did the work it was timed for.

Only the standard library is imported at module level: each builder imports its framework,
so this module loads in any interpreter and a missing framework is reported, not fatal.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["ANSWER", "BUILDERS", "QUESTION", "Script"]

QUESTION = "Call the tool until you are told to stop, then answer."
ANSWER = "finished after the tool calls"


class Script:
    """The fake model's whole brain: ``steps`` tool calls, then an answer."""

    def __init__(self, steps: int) -> None:
        self.steps = steps
        self.turn = 0
        self.tool_runs = 0
        self.on_reset: list[Callable[[], None]] = []
        """Untimed clean-up between runs (a fake model's recordings, kept across runs otherwise)."""

    def reset(self) -> None:
        self.turn = 0
        self.tool_runs = 0
        for hook in self.on_reset:
            hook()

    def next_is_tool(self) -> bool:
        """Advance one model turn; True while the model should still call the tool."""
        self.turn += 1
        return self.turn <= self.steps


Built = tuple[Callable[[], Any], Callable[[], int]]


def _plain(script: Script) -> Built:
    """A hand-written tool loop with dict messages: the floor no framework can beat."""

    def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        if script.next_is_tool():
            return {"role": "assistant", "tool_calls": [{"id": f"c{script.turn}", "name": "noop", "arguments": {}}]}
        return {"role": "assistant", "content": ANSWER}

    def noop() -> str:
        script.tool_runs += 1
        return "ok"

    tools = {"noop": noop}

    def run() -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        while True:
            reply = model(messages)
            messages.append(reply)
            if "tool_calls" not in reply:
                return reply["content"]
            for call in reply["tool_calls"]:
                out = tools[call["name"]](**call["arguments"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": out})

    return run, lambda: script.tool_runs


def _plain_async(script: Script) -> Built:
    """The same loop with an async model and tool: the floor for an asyncio design."""

    async def model() -> bool:
        return script.next_is_tool()

    async def noop() -> str:
        script.tool_runs += 1
        return "ok"

    async def run() -> str:
        messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
        while await model():
            call = {"id": f"c{script.turn}", "name": "noop", "arguments": {}}
            messages.append({"role": "assistant", "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": await noop()})
        messages.append({"role": "assistant", "content": ANSWER})
        return ANSWER

    return run, lambda: script.tool_runs


def _langgraph(script: Script) -> Built:
    """``langgraph.prebuilt.create_react_agent`` with a minimal ``BaseChatModel``."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import tool

    class FakeToolModel(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "fake-tool-model"

        def bind_tools(self, tools: Any, **kwargs: Any) -> FakeToolModel:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
            if script.next_is_tool():
                msg = AIMessage(content="", tool_calls=[{"name": "noop", "args": {}, "id": f"c{script.turn}"}])
            else:
                msg = AIMessage(content=ANSWER)
            return ChatResult(generations=[ChatGeneration(message=msg)])

    @tool
    def noop() -> str:
        """Do nothing."""
        script.tool_runs += 1
        return "ok"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

        graph = create_react_agent(FakeToolModel(), [noop])
    config = {"recursion_limit": 4 * script.steps + 10}

    def run() -> Any:
        return graph.invoke({"messages": [("user", QUESTION)]}, config)

    return run, lambda: script.tool_runs


def _llamaindex(script: Script) -> Built:
    """LlamaIndex's workflow ``ReActAgent`` with a minimal ``CustomLLM`` writing ReAct text."""
    from llama_index.core.agent.workflow import ReActAgent
    from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
    from llama_index.core.llms.callbacks import llm_completion_callback
    from llama_index.core.tools import FunctionTool

    call = "Thought: I need to use a tool.\nAction: noop\nAction Input: {}"
    final = f"Thought: I can answer without using any more tools.\nAnswer: {ANSWER}"

    class FakeReActLLM(CustomLLM):
        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(model_name="fake-react")

        @llm_completion_callback()
        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
            return CompletionResponse(text=call if script.next_is_tool() else final)

        @llm_completion_callback()
        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            text = call if script.next_is_tool() else final
            yield CompletionResponse(text=text, delta=text)

    async def noop() -> str:
        """Do nothing."""
        script.tool_runs += 1
        return "ok"

    agent = ReActAgent(tools=[FunctionTool.from_defaults(async_fn=noop, name="noop")], llm=FakeReActLLM())

    async def run() -> Any:
        return await agent.run(user_msg=QUESTION, max_iterations=4 * script.steps + 10)

    return run, lambda: script.tool_runs


def _smolagents(script: Script) -> Built:
    """smolagents' ``ToolCallingAgent`` with a minimal ``Model`` subclass (answers via ``final_answer``)."""
    from smolagents import LogLevel, Model, ToolCallingAgent, tool
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole
    from smolagents.monitoring import TokenUsage

    class FakeToolModel(Model):
        def generate(self, messages: Any, stop_sequences: Any = None, response_format: Any = None,
                     tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:  # fmt: skip
            if script.next_is_tool():
                name, arguments = "noop", {}
            else:
                name, arguments = "final_answer", {"answer": ANSWER}
            function = ChatMessageToolCallFunction(name=name, arguments=arguments)
            return ChatMessage(
                role=MessageRole.ASSISTANT,
                content="",
                tool_calls=[ChatMessageToolCall(function=function, id=f"c{script.turn}", type="function")],
                token_usage=TokenUsage(input_tokens=0, output_tokens=0),
            )

    @tool
    def noop() -> str:
        """Do nothing."""
        script.tool_runs += 1
        return "ok"

    agent = ToolCallingAgent(
        tools=[noop],
        model=FakeToolModel(model_id="fake"),
        max_steps=2 * script.steps + 10,
        verbosity_level=LogLevel.OFF,
    )

    def run() -> Any:
        return agent.run(QUESTION)

    return run, lambda: script.tool_runs


def _pydantic_ai(script: Script) -> Built:
    """pydantic-ai's ``Agent`` with its ``FunctionModel``."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if script.next_is_tool():
            return ModelResponse(parts=[ToolCallPart(tool_name="noop", args={}, tool_call_id=f"c{script.turn}")])
        return ModelResponse(parts=[TextPart(ANSWER)])

    agent = Agent(FunctionModel(respond))

    @agent.tool_plain
    async def noop() -> str:
        """Do nothing."""
        script.tool_runs += 1
        return "ok"

    async def run() -> Any:
        return await agent.run(QUESTION)

    return run, lambda: script.tool_runs


def _reasonloop(strategy: str, minimal_llm: bool = False, traced: bool = False) -> Callable[[Script], Built]:
    """reasonloop's ``Agent``; the whole event stream is consumed.

    The model is ``ScriptedProvider`` (which records every prompt it is sent, for tests) or,
    with ``minimal_llm``, the smallest :class:`~reasonloop.llm.base.LLM` subclass, like the
    peers' fakes: one chunk per reply and reported usage, so no usage estimate is made. With
    ``traced``, OpenTelemetry tracing is on, its spans going in batches (as OTLP gets them) to the
    SDK's in-memory exporter, emptied between runs, and its GenAI metrics to an in-memory reader:
    what tracing itself adds.
    """

    def build(script: Script) -> Built:
        from reasonloop.agents import Agent
        from reasonloop.llm.base import LLM, Done, TextDelta, ToolCallDelta
        from reasonloop.llm.scripted import ScriptedProvider
        from reasonloop.tools.base import tool

        if strategy == "react":
            call: Any = "Thought: I need to use a tool.\nAction: noop\nAction Input: {}"
            final: Any = f"Thought: I can answer now.\nFinal Answer: {ANSWER}"
        else:
            call = {"tool_calls": [{"name": "noop", "arguments": {}}]}
            final = ANSWER

        def reply(messages: list[Any], tools: list[Any] | None) -> Any:
            return call if script.next_is_tool() else final

        class MinimalLLM(LLM):
            id = "minimal"

            async def _stream(self, request: Any) -> Any:
                answer = reply(request.messages, request.tools)
                if isinstance(answer, str):
                    yield TextDelta(answer)
                    yield Done(finish_reason="stop", prompt_tokens=1, completion_tokens=1)
                else:
                    yield ToolCallDelta(index=0, id=f"c{script.turn}", name="noop", arguments="{}")
                    yield Done(finish_reason="tool_calls", prompt_tokens=1, completion_tokens=1)

        @tool
        async def noop() -> str:
            """Do nothing."""
            script.tool_runs += 1
            return "ok"

        # One text delta per reply, like the peers' fakes; budgets above the script's length.
        llm = MinimalLLM() if minimal_llm else ScriptedProvider(replies=reply, chunk_size=1 << 20)

        def forget() -> None:  # as if each run had a fresh provider: its logs would grow without end
            llm.calls.clear()
            if isinstance(llm, ScriptedProvider):
                llm.prompts.clear()
                llm.tools_seen.clear()
                llm.stops_seen.clear()

        script.on_reset.append(forget)
        if traced:
            from opentelemetry.sdk.metrics.export import InMemoryMetricReader
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

            from reasonloop import telemetry
            from reasonloop.config import Settings

            exporter = InMemorySpanExporter()
            telemetry.configure(
                Settings(), span_exporter=exporter, metric_reader=InMemoryMetricReader(), set_global=False, batch=True
            )
            script.on_reset.append(exporter.clear)
        budget = {"max_rounds": script.steps + 5, "max_tool_calls": script.steps + 5}
        agent = Agent(reasoning=strategy, llm=llm, tools=[noop], settings=budget)

        async def run() -> Any:
            events = [event async for event in agent.stream(QUESTION)]
            return events[-1]

        return run, lambda: script.tool_runs

    return build


BUILDERS: dict[str, tuple[str, Callable[[Script], Built]]] = {
    # name: (distribution whose version is reported, builder)
    "reasonloop-toolcall": ("reasonloop", _reasonloop("toolcall")),
    "reasonloop-react": ("reasonloop", _reasonloop("react")),
    "reasonloop-toolcall/min-llm": ("reasonloop", _reasonloop("toolcall", minimal_llm=True)),
    "reasonloop-react/min-llm": ("reasonloop", _reasonloop("react", minimal_llm=True)),
    "reasonloop-toolcall/traced": ("reasonloop", _reasonloop("toolcall", traced=True)),
    "reasonloop-react/traced": ("reasonloop", _reasonloop("react", traced=True)),
    "plain": ("", _plain),
    "plain-async": ("", _plain_async),
    "langgraph": ("langgraph", _langgraph),
    "llamaindex": ("llama-index-core", _llamaindex),
    "smolagents": ("smolagents", _smolagents),
    "pydantic-ai": ("pydantic-ai-slim", _pydantic_ai),
}
