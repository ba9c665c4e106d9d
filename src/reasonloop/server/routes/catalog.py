"""Catalogs: the reasoning strategies, tools and agents a client can choose, with settings schemas,
and the thinking modes (each with the strategy it runs and whether that strategy is installed).

A web UI renders each plugin's settings form from ``settings_schema`` (JSON Schema), and selects
the strategy marked ``default`` until its user picks another. ``name`` and ``description`` are
English, ``translations`` holds them in the interface's other languages; a settings field's label
and description are its schema's ``title`` and ``description``, with theirs under ``x-translations``. Plugins that fail to load are listed
with their error rather than hidden. The tools of configured MCP servers are listed too, each with
its ``server`` and that server's ``status``; a server that offers none is one entry,
``mcp:SERVER``, with its error.
"""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from reasonloop.defaults import DEFAULT_REASONING
from reasonloop.errors import ReasonLoopError
from reasonloop.plugin_table import LANGUAGES, MODES
from reasonloop.registry import PluginEntry, PluginInfo, PluginText, resolve
from reasonloop.server.deps import principal, server_state
from reasonloop.server.gate import Caller

__all__ = ["ModeView", "PluginView", "ReasoningView", "router"]

router = APIRouter(prefix="/v1", tags=["catalog"])


class PluginView(BaseModel):
    id: str
    name: str = ""
    description: str = ""
    translations: dict[str, PluginText] = Field(default_factory=dict)
    """``name`` and ``description`` in the interface's other languages, by language code."""
    settings_schema: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    server: str | None = None
    """The MCP server offering the tool (MCP tools only)."""
    status: str | None = None
    """That server's status: ``ok``, ``unavailable`` or ``not started`` (MCP tools only)."""


def _schema(obj: Any, attr: str) -> dict[str, Any] | None:
    model = getattr(obj, attr, None)
    if inspect.isclass(model) and issubclass(model, BaseModel):
        return model.model_json_schema()
    return None


def _view(entry: PluginEntry, schema_attr: str) -> PluginView:
    if entry.error is not None:
        return PluginView(id=entry.id, error=entry.error.to_dict() | {"code": entry.error.code})
    obj = entry.obj
    info = PluginInfo.from_row(entry.row) if entry.row is not None else getattr(obj, "info", None)
    if not isinstance(info, PluginInfo):
        info = PluginInfo(id=entry.id, name=str(getattr(obj, "name", "") or ""))
    return PluginView(
        id=entry.id,
        name=info.name or entry.id,
        description=entry.description,
        translations=info.translations,
        settings_schema=_schema(obj, schema_attr),
    )


class ReasoningView(PluginView):
    default: bool = False
    """True for the strategy a run uses when it names none (:data:`~reasonloop.defaults.DEFAULT_REASONING`)."""


@router.get("/reasoning", response_model=list[ReasoningView])
async def list_reasoning(request: Request, who: Annotated[Caller, Depends(principal)]) -> list[ReasoningView]:
    """Reasoning strategies with the JSON schema of their settings; ``default`` marks the one a run
    that names none uses."""
    return [
        ReasoningView(**_view(e, "Settings").model_dump(), default=e.id == DEFAULT_REASONING)
        for e in server_state(request).registry.entries("reasoning")
    ]


@router.get("/tools", response_model=list[PluginView])
async def list_tools(request: Request, who: Annotated[Caller, Depends(principal)]) -> list[PluginView]:
    """Tools with the JSON schema of their parameters, then the tools of the MCP servers."""
    state = server_state(request)
    views = [_view(e, "Params") for e in state.registry.entries("tool")]
    if state.mcp is not None:
        manager = state.mcp()
        await manager.tools()  # a server that failed answers at once (it is retried behind)
        views.extend(_mcp_view(row) for row in manager.catalog())
    return views


def _mcp_view(row: dict[str, Any]) -> PluginView:
    error = None
    if row["error"] is not None:
        error = {"code": "tool.unavailable", "message": row["error"]}
    return PluginView(
        id=row["name"],
        name=row["name"],
        description=row["description"],
        settings_schema=row["schema"],
        error=error,
        server=row["server"],
        status=row["status"],
    )


@router.get("/agents", response_model=list[PluginView])
async def list_agents(request: Request, who: Annotated[Caller, Depends(principal)]) -> list[PluginView]:
    """Agents declared in the config (``[agents.NAME]``), with their strategy's settings schema."""
    state = server_state(request)
    views = []
    for agent_id, agent in state.agents.items():
        data = agent.model_dump() if isinstance(agent, BaseModel) else dict(agent)
        views.append(
            PluginView(
                id=str(agent_id),
                name=str(data.get("name") or agent_id),
                description=str(data.get("description", "")),
                settings_schema=_strategy_schema(state.registry, str(data.get("reasoning", ""))),
            )
        )
    return views


def _strategy_schema(registry: Any, strategy_id: str) -> dict[str, Any] | None:
    if not strategy_id:
        return None
    try:
        return _schema(resolve("reasoning", strategy_id, registry), "Settings")
    except ReasonLoopError:
        return None


class FoundModelView(BaseModel):
    """A model served on the server's machine (:class:`~reasonloop.llm.discovery.FoundModel`)."""

    id: str
    """What a run request's ``model`` names."""
    spec: str
    server: str
    base_url: str
    name: str
    kind: str
    """``instruct``, ``base``, ``embedding`` or ``unknown``."""
    kind_from: str
    """``server`` (its metadata said) or ``name`` (judged from the model's name)."""
    tool_calls: bool | None = None
    context_length: int | None = None


class InUseView(BaseModel):
    name: str = ""
    """``provider:model`` of the model runs use; empty when none is configured or found."""
    chosen_by: str = ""
    """Why, when ``[llm] provider = "auto"`` picked a served model, and how to choose another."""
    problem: str = ""
    """Why no model answers (``llm.not_configured``'s message)."""


class LLMView(BaseModel):
    in_use: InUseView
    offered: bool = False
    """Whether a run may pick one of ``found`` (only while ``[llm] provider = "auto"`` looks for them)."""
    found: list[FoundModelView] = Field(default_factory=list)


@router.get("/llm", response_model=LLMView)
async def llm_view(request: Request, who: Annotated[Caller, Depends(principal)]) -> LLMView:
    """The model runs use, and the models served on the server's machine a run may pick instead."""
    describe = server_state(request).models
    if describe is None:
        return LLMView(in_use=InUseView())
    return LLMView.model_validate(await describe())


class ModeView(BaseModel):
    """A thinking mode a run may name instead of a strategy (docs/reasoning.md, "Thinking modes")."""

    id: str
    name: str
    description: str
    translations: dict[str, PluginText] = Field(default_factory=dict)
    strategy: str
    """The strategy id the mode runs."""
    available: bool
    """Whether that strategy is installed here: a run naming a mode that is not is refused."""


@router.get("/modes", response_model=list[ModeView])
async def list_modes(request: Request, who: Annotated[Caller, Depends(principal)]) -> list[ModeView]:
    """The thinking modes, each with its strategy and whether that strategy is installed."""
    installed = {e.id for e in server_state(request).registry.entries("reasoning") if e.error is None}
    return [
        ModeView(
            id=row.id,
            name=row.en[0],
            description=row.en[1],
            translations={
                lang: PluginText(name=row.text(lang)[0], description=row.text(lang)[1])
                for lang in LANGUAGES
                if lang != "en"
            },
            strategy=row.strategy,
            available=row.strategy in installed,
        )
        for row in MODES
    ]
