"""The tool contract: typed functions become tools, and invoke never raises on a bad call."""

from __future__ import annotations

import asyncio
import threading
from enum import Enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from reasonloop.errors import ToolError
from reasonloop.events import Citation
from reasonloop.tools.base import FunctionTool, Tool, ToolContext, ToolOutput, tool
from reasonloop.tools.schema import normalize_schema


class Unit(str, Enum):  # noqa: UP042  (a str mixin enum is what users write)
    celsius = "celsius"
    fahrenheit = "fahrenheit"


class Place(BaseModel):
    city: str
    country: str | None = None


@tool
async def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@tool
def multiply(a: int, b: int = 2) -> int:
    """Multiply two integers (sync)."""
    return a * b


@tool(name="weather", description="Weather for places", timeout_s=5)
async def weather_fn(
    places: list[Place],
    unit: Unit = Unit.celsius,
    days: Annotated[int, Field(ge=1, le=7, description="How many days ahead")] = 1,
    mode: Literal["brief", "full"] = "brief",
) -> dict[str, Any]:
    """Ignored docstring."""
    return {"cities": [p.city for p in places], "unit": unit.value, "days": days, "mode": mode}


def ctx_for(run_id: str = "run-1") -> ToolContext:
    return ToolContext(run_id=run_id, call_id="call-1", services={"answer": 42})


# -- the decorator ---------------------------------------------------------------------------
async def test_async_function_tool():
    assert isinstance(add, FunctionTool)
    assert (add.name, add.description) == ("add", "Add two integers.")
    out = await add.invoke({"a": 2, "b": 3}, ctx_for())
    assert (out.text, out.ok, out.error) == ("5", True, None)
    assert out.elapsed_s >= 0


async def test_sync_function_runs_in_a_worker_thread():
    seen: list[str] = []

    @tool
    def where() -> str:
        """Name of the thread that runs me."""
        seen.append(threading.current_thread().name)
        return "ok"

    assert (await where.invoke({}, ctx_for())).text == "ok"
    assert seen and seen[0] != threading.main_thread().name


async def test_sync_tool_defaults_and_non_string_result():
    out = await multiply.invoke({"a": 4}, ctx_for())
    assert out.text == "8"


async def test_name_description_and_structured_result_are_serialised():
    assert (weather_fn.name, weather_fn.description, weather_fn.timeout_s) == ("weather", "Weather for places", 5)
    out = await weather_fn.invoke({"places": [{"city": "Oslo"}], "unit": "fahrenheit"}, ctx_for())
    assert out.ok
    assert out.text == '{"cities": ["Oslo"], "unit": "fahrenheit", "days": 1, "mode": "brief"}'


async def test_ctx_is_injected_by_name_and_by_type_and_left_out_of_the_schema():
    @tool
    async def by_name(q: str, ctx) -> str:  # an untyped ctx is recognised by its name
        """Echo with context."""
        return f"{q}:{ctx.run_id}:{ctx.services['answer']}"

    @tool
    async def by_type(q: str, context: ToolContext) -> str:
        """Echo with context."""
        return f"{q}:{context.call_id}"

    assert (await by_name.invoke({"q": "x"}, ctx_for("r9"))).text == "x:r9:42"
    assert (await by_type.invoke({"q": "y"}, ctx_for())).text == "y:call-1"
    for t in (by_name, by_type):
        assert list(t.spec().parameters["properties"]) == ["q"]


def test_missing_docstring_is_rejected():
    with pytest.raises(ToolError, match="needs a description"):

        @tool
        async def nodoc(q: str) -> str:
            return q


def test_description_argument_stands_in_for_a_docstring():
    @tool(description="Echo the query")
    async def nodoc(q: str) -> str:
        return q

    assert nodoc.description == "Echo the query"


def test_untyped_parameter_and_varargs_are_rejected():
    with pytest.raises(ToolError, match="'q' needs a type hint"):

        @tool
        async def untyped(q) -> str:
            """Doc."""
            return q

    with pytest.raises(ToolError, match=r"\*args"):

        @tool
        async def star(*qs: str) -> str:
            """Doc."""
            return ""


# -- the exported schema ----------------------------------------------------------------------
def walk(node):
    yield node
    if isinstance(node, dict):
        for value in node.values():
            yield from walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from walk(value)


def test_schema_is_a_plain_object_schema_every_provider_accepts():
    spec = weather_fn.spec()
    params = spec.parameters
    assert spec.name == "weather"
    assert params["type"] == "object"
    assert params["required"] == ["places"]
    assert set(params["properties"]) == {"places", "unit", "days", "mode"}
    for node in walk(params):
        if isinstance(node, dict):
            assert not {"$ref", "$defs", "definitions"} & set(node), node
            assert not isinstance(node.get("title"), str), node
    places = params["properties"]["places"]
    assert places["type"] == "array"
    assert places["items"]["type"] == "object"
    assert places["items"]["properties"]["city"] == {"type": "string"}
    assert places["items"]["required"] == ["city"]
    assert params["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert params["properties"]["days"]["description"] == "How many days ahead"
    assert params["properties"]["mode"]["enum"] == ["brief", "full"]


def test_schema_of_a_tool_without_parameters():
    @tool
    async def now() -> str:
        """The time."""
        return "noon"

    assert now.spec().parameters["type"] == "object"
    assert now.spec().parameters["properties"] == {}


def test_normalize_schema_repairs_hand_written_schemas():
    raw = {
        "type": "dict",
        "properties": {
            "n": {"type": "float"},
            "tags": {"type": "list"},
            "pair": {"type": "tuple", "items": [{"type": "int"}]},
            "anything": {"type": "any"},
            "flag": {"type": ["bool", "null"]},
        },
        "required": ["n", "ghost"],
    }
    out = normalize_schema(raw)
    assert out["type"] == "object"
    props = out["properties"]
    assert props["n"] == {"type": "number"}
    assert props["tags"] == {"type": "array", "items": {}}
    assert props["pair"] == {"type": "array", "items": {"type": "integer"}}
    assert props["anything"] == {}
    assert props["flag"] == {"type": ["boolean", "null"]}
    assert out["required"] == ["n"]
    assert normalize_schema({"type": "string"}) == {"type": "object", "properties": {}}


# -- invoke: every failure is an observation --------------------------------------------------
@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"a": "one", "b": 2}, "a: Input should be a valid integer"),
        ({"a": 1}, "b: Field required"),
        ({"a": 1, "b": 2, "c": 3}, "c: Extra inputs are not permitted"),
        ([1, 2], "invalid arguments for add"),
        ("not a mapping", "invalid arguments for add"),
    ],
)
async def test_invalid_arguments_become_an_error_output(arguments, fragment):
    out = await add.invoke(arguments, ctx_for())
    assert not out.ok
    assert out.error["code"] == "tool.invalid_arguments"
    assert out.error["tool"] == "add"
    assert out.error["type"] == "ToolArgumentsInvalid"
    assert fragment in out.error["error"]
    assert out.text.startswith("Error from add: ")


async def test_timeout_becomes_tool_timeout():
    @tool(timeout_s=0.05)
    async def slow() -> str:
        """Sleep forever."""
        await asyncio.Event().wait()
        return "never"

    out = await slow.invoke({}, ctx_for())
    assert out.error["code"] == "tool.timeout"
    assert "0.05s" in out.error["error"]


async def test_a_tools_own_timeout_error_is_not_reported_as_ours():
    @tool(timeout_s=30)
    async def upstream() -> str:
        """Call a server that times out."""
        raise TimeoutError("upstream read timed out")

    out = await upstream.invoke({}, ctx_for())
    assert out.error["code"] == "tool.error"
    assert "upstream read timed out" in out.error["error"]


async def test_exception_becomes_an_error_observation():
    @tool
    def boom(q: str) -> str:
        """Fail."""
        raise ValueError(f"bad {q}")

    out = await boom.invoke({"q": "input"}, ctx_for())
    assert out.error == {"tool": "boom", "error": "ValueError: bad input", "type": "ValueError", "code": "tool.error"}
    assert out.text == "Error from boom: ValueError: bad input"


async def test_reasonloop_error_keeps_its_code():
    from reasonloop.errors import KBLoadError

    @tool
    async def kb() -> str:
        """Read the knowledge base."""
        raise KBLoadError("index missing")

    out = await kb.invoke({}, ctx_for())
    assert (out.error["code"], out.error["error"]) == ("kb.load_error", "index missing")


async def test_output_is_capped():
    @tool(max_output_chars=10)
    async def chatty() -> str:
        """Talk a lot."""
        return "x" * 25

    out = await chatty.invoke({}, ctx_for())
    assert out.text == "x" * 10 + "\n…[15 characters cut]"


async def test_cancellation_propagates():
    started = asyncio.Event()

    @tool
    async def wait() -> str:
        """Wait."""
        started.set()
        await asyncio.Event().wait()
        return ""

    task = asyncio.create_task(wait.invoke({}, ctx_for()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- subclassing Tool -------------------------------------------------------------------------
class SearchParams(BaseModel):
    query: str
    top_k: int = Field(default=3, ge=1)


class SearchTool(Tool):
    name = "search"
    description = "Search the notes."
    Params = SearchParams

    async def run(self, params: SearchParams, ctx: ToolContext) -> ToolOutput:
        cites = [Citation(marker=i + 1, chunk_id=f"c{i}") for i in range(params.top_k)]
        return ToolOutput(text=f"{params.query}:{params.top_k}", citations=cites, data={"n": params.top_k})


async def test_subclass_tool_with_params_model_and_citations():
    search = SearchTool()
    out = await search.invoke({"query": "cats", "top_k": 2}, ctx_for())
    assert (out.text, out.data, len(out.citations)) == ("cats:2", {"n": 2}, 2)
    assert (await search.invoke(SearchParams(query="dogs"), ctx_for())).text == "dogs:3"
    bad = await search.invoke({"query": "cats", "top_k": 0}, ctx_for())
    assert bad.error["code"] == "tool.invalid_arguments"
    assert "top_k" in bad.error["error"]
    assert search.spec().parameters["properties"]["top_k"] == {"type": "integer", "default": 3, "minimum": 1}


async def test_tool_without_run_reports_an_error():
    class Lazy(Tool):
        name = "lazy"
        description = "Does nothing."
        Params = SearchParams

    out = await Lazy().invoke({"query": "x"}, ctx_for())
    assert out.error["type"] == "NotImplementedError"


async def test_cancellation_raised_inside_a_tool_is_a_tool_error_not_a_stop():
    async def inner() -> None:
        await asyncio.sleep(10)

    @tool
    async def flaky() -> str:
        """Awaits a task that something else cancels."""
        task = asyncio.ensure_future(inner())
        asyncio.get_running_loop().call_soon(task.cancel)
        await task
        return "unreachable"

    out = await flaky.invoke({}, ToolContext())
    assert out.error is not None and out.error["code"] == "tool.error"
    assert "cancelled internally" in out.error["error"]


async def test_stopping_the_caller_still_cancels_the_tool():
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Sleeps."""
        started.set()
        await asyncio.sleep(10)
        return "late"

    task = asyncio.ensure_future(slow.invoke({}, ToolContext()))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_citation_mappings_in_a_tool_output_are_validated_into_citations():
    @tool
    async def cites() -> ToolOutput:
        """Return a citation written as a mapping."""
        return ToolOutput(text="found", citations=[{"source": "a.md", "quote": "q"}])  # type: ignore[list-item]

    out = await cites.invoke({}, ctx_for())
    assert out.error is None and out.citations == [Citation(source="a.md", quote="q")]


@pytest.mark.parametrize(
    ("output", "fragment"),
    [
        (ToolOutput(text=None), "text must be a string"),  # type: ignore[arg-type]
        (ToolOutput(text="x", citations=[42]), "citations must be"),  # type: ignore[list-item]
        (ToolOutput(text="x", citations=[{"page": "not a number"}]), "page"),  # type: ignore[list-item]
    ],
)
async def test_a_malformed_tool_output_is_an_error_observation(output, fragment):
    @tool
    async def broken() -> ToolOutput:
        """Return a ToolOutput that breaks its own types."""
        return output

    out = await broken.invoke({}, ctx_for())
    assert out.error is not None and out.error["code"] == "tool.error"
    assert "malformed ToolOutput" in out.error["error"] and fragment in out.error["error"]
