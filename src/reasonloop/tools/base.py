"""The tool contract.

A :class:`Tool` has a ``name``, a ``description`` (what the model reads to decide when to
call it), a pydantic ``Params`` model (its JSON schema is what the model fills in) and an
async ``run(params, ctx) -> ToolOutput``. :func:`tool` makes one from a typed function.

:meth:`Tool.invoke` is how strategies call tools: it validates raw arguments, applies the
per-tool timeout and output cap, and turns every failure into a :class:`ToolOutput` with
``error`` set, so a bad call becomes an observation the model can act on, never an
exception in the caller.

Example::

    @tool
    async def add(a: int, b: int) -> str:
        \"\"\"Add two integers.\"\"\"
        return str(a + b)

    out = await add.invoke({"a": 1, "b": 2}, ToolContext())
    assert out.text == "3"
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from reasonloop._aio import first_step, resume
from reasonloop.errors import ReasonLoopError, ToolArgumentsInvalid, ToolError, ToolTimeout
from reasonloop.events import Citation, Usage
from reasonloop.llm.base import ToolSpec
from reasonloop.tools.evidence import EvidenceLog
from reasonloop.tools.schema import model_schema

__all__ = ["FunctionTool", "Pauses", "RunScope", "Tool", "ToolContext", "ToolOutput", "error_output", "tool"]

DEFAULT_TIMEOUT_S = 60.0
DEFAULT_MAX_OUTPUT_CHARS = 16_000


@dataclass(slots=True)
class ToolOutput:
    """What a tool returns: text for the model, citations for the answer, data for programs."""

    text: str = ""
    citations: list[Citation] = field(default_factory=list)
    data: Any = None
    error: dict[str, Any] | None = None
    """``{"tool", "error", "type"}`` (plus ``code``) when the call failed."""
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(slots=True)
class Pauses:
    """Time a run spends waiting for a person (a tool call awaiting approval): its time budget does
    not run meanwhile (:class:`~reasonloop.reasoning.steps.budget.BudgetTracker` reads this)."""

    waiting: int = 0
    """Calls waiting now (a round's concurrent calls may each wait)."""
    since: float = 0.0
    total_s: float = 0.0
    """Seconds spent waiting before the current wait."""

    def begin(self) -> None:
        if self.waiting == 0:
            self.since = time.monotonic()
        self.waiting += 1

    def end(self) -> None:
        self.waiting -= 1
        if self.waiting == 0:
            self.total_s += time.monotonic() - self.since

    def paused_s(self) -> float:
        """Seconds spent waiting so far, the current wait included."""
        return self.total_s + (time.monotonic() - self.since if self.waiting else 0.0)


@dataclass(slots=True)
class RunScope:
    """What one run shares with every tool it calls (the same object for all of its calls)."""

    retrievers: list[Any] = field(default_factory=list)
    """The run's knowledge sources (:class:`~reasonloop.kb.base.Retriever` objects)."""
    llm: Any = None
    """The run's model, for tools that call one (``summarize``)."""
    evidence: EvidenceLog | None = None
    """The run's evidence numbering (see :meth:`evidence_log`); shared with its sub-agents."""
    max_evidence_tokens: int | None = None
    """The strategy's budget for one search's evidence, over a tool's own default."""
    kb: Any = None
    """What ``kb_stats`` reports on: an index with ``stats()``, or a list of them."""
    feedback: Any = None
    """The :class:`~reasonloop.tools.feedback.FeedbackStore` the ``feedback`` tool writes to."""
    user: str = ""
    conversation: str = ""
    agent_stack: tuple[str, ...] = ()
    """Names of the agents from the top-level run down to this one (recursion checks)."""
    stream_answer: bool = False
    """A tool that writes the answer (``summarize``) also streams it out as answer deltas."""
    pauses: Pauses = field(default_factory=Pauses)
    """Time the run waited for people (approvals), which its time budget does not count."""

    def evidence_log(self) -> EvidenceLog:
        """The run's evidence log (made on first use)."""
        if self.evidence is None:
            self.evidence = EvidenceLog()
        return self.evidence


@dataclass(slots=True)
class ToolContext:
    """What a running tool may use besides its arguments.

    Strategies fill it from their run context; everything is optional so tools can be
    called (and tested) on their own.
    """

    run_id: str = ""
    call_id: str = ""
    depth: int = 0
    emit: Callable[[Any], Awaitable[None]] | None = None
    """Send an event into the run's stream (nested sub-agent events, answer deltas)."""
    services: dict[str, Any] = field(default_factory=dict)
    """Extra resources the caller shares with its own tools, by name (``Agent(services=...)``)."""
    usage: Usage | None = None
    """The run's usage. A tool that calls models itself adds their calls and tokens here, as
    they happen, so the run's token budget and reported usage include them."""
    scope: RunScope = field(default_factory=RunScope)
    """What the run shares with its tools (retrievers, model, evidence, user, ...)."""


def error_output(tool: str, exc: BaseException, elapsed_s: float = 0.0) -> ToolOutput:
    """The observation of a failed call, ``{tool, error, type, code}``, in the one shape every
    strategy shows the model (a failure that is not ours counts as ``tool.error``)."""
    code = exc.code if isinstance(exc, ReasonLoopError) else ToolError.code
    message = exc.message if isinstance(exc, ReasonLoopError) else f"{type(exc).__name__}: {exc}"
    return ToolOutput(
        text=f"Error from {tool}: {message}",
        error={"tool": tool, "error": message, "type": type(exc).__name__, "code": code},
        elapsed_s=elapsed_s,
    )


class Tool:
    """Base class of tools. Subclasses set ``name``, ``description``, ``Params`` and ``run``."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Params: ClassVar[type[BaseModel]]
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    side_effects: bool = False
    """The tool changes something outside the run (sends a request, writes a ticket): ``[approvals]
    side_effects`` sets the policy of such tools."""

    async def run(self, params: Any, ctx: ToolContext) -> ToolOutput | str:
        raise NotImplementedError(f"{type(self).__name__}.run is not implemented")

    def spec(self) -> ToolSpec:
        """The tool as models see it (JSON schema accepted by OpenAI, Anthropic and Gemini)."""
        return ToolSpec(name=self.name, description=self.description, parameters=model_schema(self.Params))

    def _error(self, exc: BaseException, started: float) -> ToolOutput:
        return error_output(self.name, exc, time.perf_counter() - started)

    async def invoke(self, arguments: Mapping[str, Any] | BaseModel, ctx: ToolContext) -> ToolOutput:
        """Validate, run with timeout, cap the output. Never raises except on cancellation.

        The timeout runs from the tool's first wait (an await that suspends): a tool that
        answers without waiting never arms a timer, and synchronous work cannot be
        interrupted by one anyway. A :class:`ToolOutput` that breaks its own types (text
        that is not a string, citations that are not citations) is an error observation.
        """
        started = time.perf_counter()
        try:
            if isinstance(arguments, self.Params):
                params = arguments
            else:
                raw = arguments if type(arguments) is dict else dict(arguments or {})
                # The model's documented validator: model_validate minus a layer of keyword handling.
                params = self.Params.__pydantic_validator__.validate_python(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}" for e in exc.errors()
            )
            return self._error(ToolArgumentsInvalid(f"invalid arguments for {self.name}: {problems}"), started)
        except (TypeError, ValueError) as exc:
            return self._error(ToolArgumentsInvalid(f"invalid arguments for {self.name}: {exc}"), started)
        deadline: asyncio.Timeout | None = None
        try:
            done, result = first_step(self.run(params, ctx))
            if not done:  # the tool waits on something: from here its timeout applies
                deadline = asyncio.timeout(self.timeout_s)
                async with deadline:
                    result = await resume(*result)
        except TimeoutError as exc:
            if deadline is None or not deadline.expired():  # the tool's own timeout: report it as it is
                return self._error(exc, started)
            return self._error(ToolTimeout(f"{self.name} did not finish within {self.timeout_s:g}s"), started)
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the run (or this call) is being stopped: let it stop
            # A cancellation that started inside the tool (an inner task someone else cancelled)
            # is the tool's failure, not a stop request for the run.
            return self._error(ToolError(f"{self.name} was cancelled internally ({exc or 'no reason'})"), started)
        except Exception as exc:
            return self._error(exc, started)
        if type(result) is str:
            out = ToolOutput(text=result)
        elif isinstance(result, ToolOutput):
            out = result
            if type(out.text) is not str or any(type(c) is not Citation for c in out.citations):
                try:
                    out = _checked(out)
                except (TypeError, ValueError) as exc:
                    return self._error(ToolError(f"{self.name} returned a malformed ToolOutput: {exc}"), started)
        else:
            out = ToolOutput(text=_as_text(result))
        if len(out.text) > self.max_output_chars:
            dropped = len(out.text) - self.max_output_chars
            out.text = out.text[: self.max_output_chars] + f"\n…[{dropped} characters cut]"
        out.elapsed_s = time.perf_counter() - started
        return out


def _checked(out: ToolOutput) -> ToolOutput:
    """``out`` with its text and citations of the declared types (citation dicts validated).

    Raises:
        TypeError: the text is not a string or a citation is neither a citation nor a mapping.
        ValueError: a citation mapping does not validate.
    """
    if not isinstance(out.text, str):
        raise TypeError(f"text must be a string, got {type(out.text).__name__}")
    citations = []
    for item in out.citations or ():
        if isinstance(item, Citation):
            citations.append(item)
        elif isinstance(item, Mapping):
            citations.append(Citation.model_validate(dict(item)))  # ValidationError is a ValueError
        else:
            raise TypeError(f"citations must be Citation objects or mappings, got {type(item).__name__}")
    out.citations = citations
    return out


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    import json

    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


class FunctionTool(Tool):
    """A tool made from a typed function by :func:`tool`."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        self.fn = fn
        self.name = name or fn.__name__  # type: ignore[misc]
        doc = inspect.getdoc(fn) or ""
        self.description = description or doc  # type: ignore[misc]
        if not self.description:
            raise ToolError(f"tool {self.name!r} needs a description (write a docstring)", tool=self.name)
        self.timeout_s = timeout_s
        self.max_output_chars = max_output_chars
        self._is_async = inspect.iscoroutinefunction(fn)
        self._ctx_param, self.Params = _params_model(fn, self.name)  # type: ignore[misc]
        self._fields = tuple(self.Params.model_fields)  # looked up once: the class property is not free

    def run(self, params: Any, ctx: ToolContext) -> Awaitable[Any]:  # type: ignore[override]
        # Not a coroutine itself: it hands back the function's own awaitable, one frame fewer per call.
        kwargs = {k: getattr(params, k) for k in self._fields}
        if self._ctx_param:
            kwargs[self._ctx_param] = ctx
        if self._is_async:
            return self.fn(**kwargs)  # type: ignore[no-any-return]
        return asyncio.to_thread(self.fn, **kwargs)


def _params_model(fn: Callable[..., Any], name: str) -> tuple[str | None, type[BaseModel]]:
    """The name of the parameter that receives the context (if any) and the model of the others."""
    hints = get_type_hints(fn, include_extras=True)
    fields: dict[str, Any] = {}
    ctx_param: str | None = None
    for pname, param in inspect.signature(fn).parameters.items():
        if pname == "ctx" or hints.get(pname) is ToolContext:
            ctx_param = pname
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolError(f"tool {name!r}: *args/**kwargs cannot be described to a model", tool=name)
        if pname not in hints:
            raise ToolError(f"tool {name!r}: parameter {pname!r} needs a type hint", tool=name)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (hints[pname], default)
    model = create_model(  # type: ignore[call-overload]
        f"{name}_params", __config__=ConfigDict(extra="forbid"), **fields
    )
    return ctx_param, model


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> Any:
    """Make a :class:`Tool` from a typed sync or async function (docstring = description).

    A parameter named ``ctx`` (or typed :class:`ToolContext`) receives the context and is
    left out of the schema; sync functions run in a worker thread. Use ``Annotated[int,
    Field(description=...)]`` to describe a parameter to the model.
    """

    def wrap(f: Callable[..., Any]) -> FunctionTool:
        return FunctionTool(
            f, name=name, description=description, timeout_s=timeout_s, max_output_chars=max_output_chars
        )

    return wrap(fn) if fn is not None else wrap
