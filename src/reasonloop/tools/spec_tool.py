"""Tools described by a JSON schema instead of Python types.

MCP servers, OpenAPI documents and hand-written specs describe arguments as JSON schema.
:class:`SpecTool` wraps such a spec and an async handler: the schema is normalised
(:func:`reasonloop.tools.schema.normalize_schema`), arguments are coerced and validated
against it (:func:`reasonloop.tools.schema.params_model`), and the handler receives the
validated arguments as a dict.

Example::

    async def weather(args, ctx):
        return f"sunny in {args['city']}"

    t = SpecTool("weather", "Current weather.", {"type": "dict", "properties": {"city": {"type": "string"}}}, weather)
    out = await t.invoke({"city": "Oslo"}, ToolContext())
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from reasonloop.errors import ToolError
from reasonloop.llm.base import ToolSpec
from reasonloop.tools.base import DEFAULT_MAX_OUTPUT_CHARS, DEFAULT_TIMEOUT_S, Tool, ToolContext, ToolOutput
from reasonloop.tools.schema import JSONSchemaParams, params_model

__all__ = ["SpecHandler", "SpecTool"]

SpecHandler = Callable[[dict[str, Any], ToolContext], Awaitable[ToolOutput | str | Any]]


class SpecTool(Tool):
    """A tool whose parameters are a JSON schema.

    Args:
        name: Tool name as the model sees it.
        description: What the tool does (the model reads it).
        parameters: JSON schema of the arguments, quirks allowed (``"type": "dict"``, ...).
        handler: ``async (arguments, ctx) -> ToolOutput | str | data``.
        timeout_s: Per-call timeout.
        max_output_chars: Output cap.

    Raises:
        ToolError: the schema is not usable even after normalising.
    """

    def __init__(
        self,
        name: str,
        description: str,
        parameters: dict[str, Any] | None,
        handler: SpecHandler | None = None,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
    ) -> None:
        self.name = name  # type: ignore[misc]
        self.description = description  # type: ignore[misc]
        try:
            self.Params = params_model(parameters or {}, f"{name}_params")  # type: ignore[misc]
        except Exception as exc:
            raise ToolError(f"tool {name!r} has an unusable parameter schema: {exc}", tool=name) from exc
        self.handler = handler
        self.timeout_s = timeout_s
        self.max_output_chars = max_output_chars

    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.Params.model_json_schema())

    async def run(self, params: JSONSchemaParams, ctx: ToolContext) -> Any:
        if self.handler is None:
            raise ToolError(f"tool {self.name!r} has no handler", tool=self.name)
        return await self.handler(params.arguments(), ctx)
