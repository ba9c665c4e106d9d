"""The shapes of output real models write, each read as a tool call and as a final answer.

Every shape has one turn that asks for a search and one that answers (our own examples, written
in the layout each family of models uses). Each pair runs through the ReAct loop with the scripted
model: the search must reach the knowledge base with the query, and the answer must be exactly
the answer, with no label, fence, JSON or scaffolding around it.
"""

from __future__ import annotations

import pytest

from reasonloop.agents import Agent
from reasonloop.events import AnswerDelta, Thought, ToolCall
from reasonloop.kb.base import Hit
from reasonloop.llm.scripted import ScriptedProvider
from reasonloop.reasoning.formats.react_parser import parse_react
from tests.reasoning.helpers import FakeRetriever, collect_events

QUERY = "warranty period of the X200"
ANSWER = "The X200 has a two-year warranty [1]."
HITS = [Hit(chunk_id="w1", document_id="d1", source="x200.md", text="Every X200 carries a two-year warranty period.")]

SHAPES: dict[str, tuple[str, str]] = {
    "langchain_react": (
        f"Thought: The question is about a product's warranty, so I should search the manuals.\n"
        f"Action: docsearch\nAction Input: {QUERY}",
        f"Thought: I now know the final answer\nFinal Answer: {ANSWER}",
    ),
    "langchain_conversational": (
        f"Thought: Do I need to use a tool? Yes\nAction: docsearch\nAction Input: {QUERY}",
        f"Thought: Do I need to use a tool? No\nAI: {ANSWER}",
    ),
    "json_blob_bare": (
        f'{{"action": "docsearch", "action_input": "{QUERY}"}}',
        f'{{"action": "Final Answer", "action_input": "{ANSWER}"}}',
    ),
    "json_blob_fenced_without_label": (
        f'I will look this up in the manuals.\n```json\n{{"action": "docsearch", "action_input": {{"query": "{QUERY}"}}}}\n```',
        f'I have what I need.\n```json\n{{"action": "Final Answer", "action_input": "{ANSWER}"}}\n```',
    ),
    "json_blob_fenced_after_action_label": (
        f'Thought: I should search for the warranty.\nAction:\n```json\n{{\n  "action": "docsearch",\n'
        f'  "action_input": {{"query": "{QUERY}"}}\n}}\n```',
        f'Thought: The passage answers it.\nAction:\n```\n{{\n  "action": "Final Answer",\n'
        f'  "action_input": "{ANSWER}"\n}}\n```',
    ),
    "json_blob_unfenced_after_action_label": (
        f'Thought: search first\nAction: {{"action": "docsearch", "action_input": "{QUERY}"}}',
        f'Thought: done\nAction: {{"action": "Final Answer", "action_input": "{ANSWER}"}}',
    ),
    "json_tool_name_keys": (
        f'{{"tool_name": "docsearch", "tool_arguments": {{"query": "{QUERY}"}}}}',
        f'{{"tool_name": "final_answer", "tool_arguments": {{"answer": "{ANSWER}"}}}}',
    ),
    "json_name_arguments_keys": (
        f'```json\n{{"name": "docsearch", "arguments": {{"query": "{QUERY}"}}}}\n```',
        f'{{"name": "final_answer", "arguments": {{"text": "{ANSWER}"}}}}',
    ),
    "json_openai_function_object": (
        f'{{"type": "function", "function": {{"name": "docsearch", "arguments": "{{\\"query\\": \\"{QUERY}\\"}}"}}}}',
        f"Thought: I can answer.\nFinal Answer: {ANSWER}",
    ),
    "json_name_parameters_keys": (
        f'{{"name": "docsearch", "parameters": {{"query": "{QUERY}"}}}}',
        ANSWER,
    ),
    "json_list_after_a_special_token": (
        f'[TOOL_CALLS] [{{"name": "docsearch", "arguments": {{"query": "{QUERY}"}}}}]',
        f"Final Answer: {ANSWER}",
    ),
    "react_paper_finish": (
        f"Thought 1: I need the warranty of the X200.\nAction 1: docsearch[{QUERY}]",
        f"Thought 2: The manual gives it.\nAction 2: Finish[{ANSWER}]",
    ),
    "react_finetune_lowercase_finish": (
        f"Action: docsearch[{QUERY}]",
        f"Action: finish[{ANSWER}]",
    ),
    "hermes_tool_call_tag": (
        f'<tool_call>\n{{"name": "docsearch", "arguments": {{"query": "{QUERY}"}}}}\n</tool_call>',
        f"<think>\nThe passage says two years.\n</think>\n\n{ANSWER}",
    ),
    "function_tag_json": (
        f'Let me check.\n<function=docsearch>{{"query": "{QUERY}"}}</function>',
        f"<think>The manual answers this.</think>\nFinal Answer: {ANSWER}",
    ),
    "function_tag_parameters": (
        f"<function=docsearch>\n<parameter=query>\n{QUERY}\n</parameter>\n</function>",
        f"Thought:\nFinal Answer: {ANSWER}",
    ),
}


def agent(replies: list[str], reasoning: str = "react", **kwargs) -> tuple[Agent, ScriptedProvider, FakeRetriever]:
    llm = ScriptedProvider(replies=replies, **kwargs)
    retriever = FakeRetriever(HITS)
    return Agent(reasoning, llm=llm, kb=retriever), llm, retriever


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_call_turn_reads_as_a_search(shape: str) -> None:
    parsed = parse_react(SHAPES[shape][0])
    assert parsed.kind == "action" and parsed.action == "docsearch"
    assert parsed.action_input in (QUERY, {"query": QUERY})


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_final_turn_reads_as_exactly_the_answer(shape: str) -> None:
    parsed = parse_react(SHAPES[shape][1])
    assert parsed.kind in ("final", "text") and parsed.text_answer() == ANSWER


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_react_searches_then_answers_in_every_shape(shape: str) -> None:
    a, llm, retriever = agent(list(SHAPES[shape]))
    events = await collect_events(a, "How long is the X200's warranty?")
    assert retriever.queries == [QUERY]
    answer = events[-1]
    assert answer.type == "answer" and answer.text == ANSWER and answer.stop_reason == "final"
    assert [c.chunk_id for c in answer.citations] == ["w1"]
    streamed = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    assert streamed in ("", ANSWER)  # streamed, or given whole: never the scaffolding
    assert llm.requests == 2


@pytest.mark.parametrize("shape", ["hermes_tool_call_tag", "function_tag_json", "json_name_arguments_keys"])
async def test_toolcall_reads_calls_left_in_the_text(shape: str) -> None:
    a, llm, retriever = agent(list(SHAPES[shape]), "toolcall")
    events = await collect_events(a, "How long is the X200's warranty?")
    assert retriever.queries == [QUERY]
    calls = [e for e in events if isinstance(e, ToolCall)]
    assert [(c.tool, c.input) for c in calls] == [("docsearch", {"query": QUERY})]
    sent = llm.prompts[1]
    assert sent[-2].role == "assistant" and [c.name for c in sent[-2].tool_calls] == ["docsearch"]
    assert "<" not in sent[-2].content and "{" not in sent[-2].content  # the call went back as a call
    assert sent[-1].role == "tool" and sent[-1].tool_call_id == calls[0].call_id
    assert events[-1].text == ANSWER
    streamed = "".join(e.text for e in events if isinstance(e, AnswerDelta))
    assert "<" not in streamed and "{" not in streamed and "The passage says" not in streamed


async def test_toolcall_runs_every_call_of_a_list_left_in_the_text() -> None:
    listed = (
        '[TOOL_CALLS] [{"name": "docsearch", "arguments": {"query": "warranty"}}, '
        '{"name": "DocSearch", "arguments": {"query": "X200 repairs"}}]'
    )
    a, llm, retriever = agent([listed, ANSWER], "toolcall")
    events = await collect_events(a, "q")
    assert sorted(retriever.queries) == ["X200 repairs", "warranty"]
    assert [e.tool for e in events if isinstance(e, ToolCall)] == ["docsearch", "docsearch"]
    assert llm.prompts[1][-3].content == "" and len(llm.prompts[1][-3].tool_calls) == 2


async def test_toolcall_streams_the_answer_after_thinking_and_keeps_the_thinking_as_a_thought() -> None:
    final = SHAPES["hermes_tool_call_tag"][1]
    a, _, _ = agent([final], "toolcall", chunk_size=3)
    events = await collect_events(a, "How long is the X200's warranty?")
    assert "".join(e.text for e in events if isinstance(e, AnswerDelta)) == ANSWER
    assert events[-1].text == ANSWER


async def test_toolcall_keeps_json_in_an_answer_that_names_no_tool() -> None:
    text = 'The record reads {"name": "X200", "arguments": "none"} in the catalogue.'
    a, _, retriever = agent([text], "toolcall")
    result = await a.run("What does the catalogue record say?")
    assert result.content == text and retriever.queries == []


async def test_a_final_answer_blob_is_never_shown_as_json() -> None:
    a, _, _ = agent(['```json\n{"action": "Final Answer", "action_input": {"answer": "Two years."}}\n```'])
    assert (await a.run("q")).content == "Two years."


def test_scaffolding_never_reaches_the_answer() -> None:
    assert parse_react("Thought: Do I need to use a tool? No\nAI: Hello! How can I help?").text_answer() == (
        "Hello! How can I help?"
    )
    assert parse_react("Thought:\nParis is the capital.").text_answer() == "Paris is the capital."
    unclosed = parse_react("<think>The user wants the warranty, I should")
    assert unclosed.kind == "unreadable" and unclosed.text_answer() == "The user wants the warranty, I should"
    closed_only = parse_react("the question is easy</think>\n\nTwo years.")  # the opening tag was in the prompt
    assert closed_only.text_answer() == "Two years." and closed_only.thought == "the question is easy"


def test_action_input_none_means_no_input() -> None:
    parsed = parse_react("Thought: I should look at the index.\nAction: kb_stats\nAction Input: None")
    assert parsed.kind == "action" and parsed.action == "kb_stats" and parsed.action_input == ""
    assert parse_react("Action: kb_stats\nAction Input: null").action_input == ""


async def test_the_thought_before_a_tag_call_is_shown_as_a_thought() -> None:
    a, _, _ = agent(list(SHAPES["function_tag_json"]))
    events = await collect_events(a, "q")
    assert any(isinstance(e, Thought) and e.text == "Let me check." for e in events)


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("Action: I will search the manuals for the warranty", "names no tool"),
        ('<tool_call>\n{"name": "docsearch", "arguments": {"query": \n</tool_call>', "<tool_call> tag"),
        ('Action:\n```json\n{"action": "docsearch", "action_input": \n```', "not a valid tool call"),
        ('{"action": "docsearch", "action_input": "x"', "not valid JSON"),
        ("Thought: searching\nFinal Answer:", "Final Answer is empty"),
        ("", "empty"),
    ],
)
def test_a_turn_that_tries_the_format_and_fails_says_why(reply: str, problem: str) -> None:
    parsed = parse_react(reply)
    assert parsed.kind == "unreadable" and problem in (parsed.problem or "")
    assert "{" not in parsed.text_answer() and "<" not in parsed.text_answer()


def test_json_in_an_answer_that_is_no_call_stays_the_answer() -> None:
    text = 'The export holds one record: {"name": "Ada", "role": "admin"}.'
    assert parse_react(text).kind == "text" and parse_react(text).text_answer() == text
    cut = 'An example record looks like {"name": "Ada", ... and so on.'
    assert parse_react(cut).kind == "text"


def test_no_action_without_input_answers_with_the_thought_never_the_labels() -> None:
    parsed = parse_react("Thought: Hello! How can I help you today?\nAction: None\nAction Input: None")
    assert parsed.kind == "final" and parsed.text_answer() == "Hello! How can I help you today?"
    assert parse_react("Action: None\nAction Input: None").kind == "unreadable"
    assert parse_react("Thought: done\nAction: Final Answer").problem == "the Final Answer is empty"
